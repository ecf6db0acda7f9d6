package tray

// Error codes the service puts on agents that package api does not name
// yet. Every use in the tray goes through these.
const (
	// codeCrashLoop: the service parked the agent in failed after too
	// many quick failures in a row.
	codeCrashLoop = "crash_loop"
	// codeExited: the agent ended on its own.
	codeExited = "exited"
)
