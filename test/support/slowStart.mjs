// Loaded with NODE_OPTIONS="--import <this file>": makes the process whose entry ends with
// SLOW_START_ENTRY wait SLOW_START_MS before its entry runs, printing a line every 5 s, the way a
// start-up on a loaded machine looks to a launcher (test/reliability/devLauncher.test.ts).
const entry = process.env.SLOW_START_ENTRY;
if (entry && process.argv[1]?.endsWith(entry)) {
  const until = Date.now() + Number(process.env.SLOW_START_MS ?? 0);
  while (Date.now() < until) {
    console.log(`slow start: ${Math.ceil((until - Date.now()) / 1000)} s to go`);
    await new Promise((r) => setTimeout(r, Math.min(5_000, Math.max(0, until - Date.now()))));
  }
}
