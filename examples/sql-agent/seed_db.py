"""Creates the shop database a SQL task starts from: `python3 seed_db.py shop.db` in the rollout's workdir.

The task set's `setup.command` runs this before the agent starts; the agent itself never builds its world.
The SQL comes from shop.sql next to this file, written by scripts/make-tasks.ts.
"""

import pathlib
import sqlite3
import sys


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: seed_db.py DATABASE_PATH")
    target = pathlib.Path(sys.argv[1])
    if target.exists():
        sys.exit(f"seed_db: {target} already exists; refusing to overwrite it")
    seed = (pathlib.Path(__file__).resolve().parent / "shop.sql").read_text(encoding="utf-8")
    partial = target.with_name(target.name + ".partial")
    con = sqlite3.connect(partial)
    try:
        con.executescript(seed)
        con.commit()
    finally:
        con.close()
    partial.rename(target)  # the agent never sees a half-written database


if __name__ == "__main__":
    main()
