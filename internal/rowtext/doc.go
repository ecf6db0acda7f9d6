// Package rowtext says an agent's row in the words a person reads: its
// error in one line with the cause first and without the context that
// repeats what the row already says (Error), and what a starting agent
// waits for (Waiting, Progress). The command line, the terminal view and
// the tray show a row through it, so that the three say the same. It
// reads the local API's contract and nothing else of tether: it decides
// from typed fields (the code, the processes left, the last ending),
// and only shortens the message for display; the message itself stays
// whole in the API.
package rowtext
