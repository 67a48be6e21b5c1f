// Preloaded (`--import`) into every process the spawn helper starts from a bundle. The bundle itself
// needs no TypeScript loader, but the server starts the CLI as a child of its own with its own
// execArgv and the CLI's source path (the scheduled backup): that child gets tsx, as `npm start`'s
// children do, because its entry point is a .ts file.
if (process.argv[1]?.endsWith('.ts')) await import('tsx');
