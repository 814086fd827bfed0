import type { SeededRandom } from '../task-sets/seeded-random.js';

/** The shop database every SQL task starts from, and tasks whose expected end state is computed here. */
type Row = (string | number)[];
export interface Shop {
  customers: Row[]; // id, name, email
  products: Row[]; // id, name, price, stock
  orders: Row[]; // id, customer_id, product_id, quantity, status
}

/** SELECTs for the sqlite_state reward; task.reference.expectedRows has one entry per name. */
export const SHOP_QUERIES = {
  customers: 'SELECT id, name, email FROM customers ORDER BY id',
  products: 'SELECT id, name, price, stock FROM products ORDER BY id',
  orders: 'SELECT id, customer_id, product_id, quantity, status FROM orders ORDER BY id',
} as const;

const CUSTOMERS = [
  'Ana Diaz',
  'Ben Okafor',
  'Chen Wei',
  'Dara Kim',
  'Eli Novak',
  'Fatima Zahra',
  'Gus Berg',
  'Hana Sato',
];
const PRODUCTS = ['pencil', 'notebook', 'stapler', 'ruler', 'eraser', 'backpack'];

export function makeShop(r: SeededRandom): Shop {
  const customers = CUSTOMERS.map((name, i) => [i + 1, name, `${name.split(' ')[0]!.toLowerCase()}@example.com`]);
  const products = PRODUCTS.map((name, i) => [i + 1, name, r.int(1, 60), r.int(0, 200)]);
  const orders = Array.from({ length: 20 }, (_, i) => [
    i + 1,
    r.int(1, customers.length),
    r.int(1, products.length),
    r.int(1, 5),
    r.pick(['pending', 'pending', 'shipped', 'delivered']),
  ]);
  return { customers, products, orders };
}

const sqlValue = (v: string | number) => (typeof v === 'number' ? String(v) : `'${v.replace(/'/g, "''")}'`);

export function shopSeedSql(shop: Shop): string {
  const insert = (table: string, rows: Row[]) =>
    rows.map((row) => `INSERT INTO ${table} VALUES (${row.map(sqlValue).join(', ')});`);
  return [
    'CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL);',
    'CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price INTEGER NOT NULL, stock INTEGER NOT NULL);',
    'CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(id),',
    '  product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL, status TEXT NOT NULL);',
    ...insert('customers', shop.customers),
    ...insert('products', shop.products),
    ...insert('orders', shop.orders),
    '',
  ].join('\n');
}

export interface ShopTask {
  kind: string;
  instruction: string;
  /** One correct statement; tests apply it to the seeded DB and check it yields expectedRows. */
  solutionSql: string;
  expectedRows: Shop;
}

const clone = (shop: Shop): Shop => structuredClone(shop);
const byId = (rows: Row[], id: number) => rows.find((row) => row[0] === id)!;

/**
 * How an instruction is worded: `a` for the train and eval sets, `b` for held-out set b (eval-b.jsonl): the same
 * changes asked for in other words, so a gain that only fits set a's wording shows as none on set b.
 */
export type Wording = 'a' | 'b';
type Maker = (r: SeededRandom, shop: Shop, wording: Wording) => ShopTask;
const MAKERS: Record<string, Maker> = {
  shipOrder(r, shop, w) {
    const id = r.pick(shop.orders.filter((o) => o[4] === 'pending'))[0] as number;
    const next = clone(shop);
    byId(next.orders, id)[4] = 'shipped';
    return {
      kind: 'shipOrder',
      instruction:
        w === 'a'
          ? `Mark order ${id} as shipped.`
          : `Order ${id} has gone out to the customer: its status is shipped now.`,
      solutionSql: `UPDATE orders SET status = 'shipped' WHERE id = ${id};`,
      expectedRows: next,
    };
  },
  cancelOrder(r, shop, w) {
    const id = r.pick(shop.orders.filter((o) => o[4] === 'pending'))[0] as number;
    const next = clone(shop);
    byId(next.orders, id)[4] = 'cancelled';
    return {
      kind: 'cancelOrder',
      instruction:
        w === 'a'
          ? `Set the status of order ${id} to cancelled.`
          : `The customer called off order ${id}; record it as cancelled.`,
      solutionSql: `UPDATE orders SET status = 'cancelled' WHERE id = ${id};`,
      expectedRows: next,
    };
  },
  setPrice(r, shop, w) {
    const [id, name] = r.pick(shop.products) as [number, string];
    const price = r.int(61, 99);
    const next = clone(shop);
    byId(next.products, id)[2] = price;
    return {
      kind: 'setPrice',
      instruction:
        w === 'a' ? `Change the price of the ${name} to ${price}.` : `From today the ${name} costs ${price}.`,
      solutionSql: `UPDATE products SET price = ${price} WHERE name = '${name}';`,
      expectedRows: next,
    };
  },
  restock(r, shop, w) {
    const [id, name, , stock] = r.pick(shop.products) as [number, string, number, number];
    const added = r.int(5, 50);
    const next = clone(shop);
    byId(next.products, id)[3] = stock + added;
    return {
      kind: 'restock',
      instruction:
        w === 'a'
          ? `Add ${added} units to the stock of the ${name}.`
          : `A delivery brought ${added} more ${name}s: update what is in stock.`,
      solutionSql: `UPDATE products SET stock = stock + ${added} WHERE name = '${name}';`,
      expectedRows: next,
    };
  },
  changeEmail(r, shop, w) {
    const [id, name] = r.pick(shop.customers) as [number, string];
    const email = `${name.split(' ')[0]!.toLowerCase()}${r.int(1, 99)}@mail.test`;
    const next = clone(shop);
    byId(next.customers, id)[2] = email;
    return {
      kind: 'changeEmail',
      instruction:
        w === 'a' ? `Change the email of customer ${name} to ${email}.` : `${name} has a new email address, ${email}.`,
      solutionSql: `UPDATE customers SET email = '${email}' WHERE id = ${id};`,
      expectedRows: next,
    };
  },
  deleteOrder(r, shop, w) {
    const id = r.pick(shop.orders)[0] as number;
    const next = clone(shop);
    next.orders = next.orders.filter((o) => o[0] !== id);
    return {
      kind: 'deleteOrder',
      instruction: w === 'a' ? `Delete order ${id}.` : `Remove order ${id} from the records.`,
      solutionSql: `DELETE FROM orders WHERE id = ${id};`,
      expectedRows: next,
    };
  },
};

export const SHOP_TASK_KINDS = Object.keys(MAKERS);

export function makeShopTask(
  r: SeededRandom,
  shop: Shop,
  kind = r.pick(SHOP_TASK_KINDS),
  wording: Wording = 'a',
): ShopTask {
  const make = MAKERS[kind];
  if (!make) throw new Error(`unknown SQL task kind ${kind}`);
  return make(r, shop, wording);
}
