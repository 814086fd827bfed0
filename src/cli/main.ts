import { runCli } from './run-cli.js';

// Exit explicitly: clients (gRPC, HTTP keep-alive) may hold handles open after a command is done.
process.exit(await runCli(process.argv.slice(2)));
