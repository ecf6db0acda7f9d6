// Package logfile is the format and the files of an agent's log: the
// writer that stamps each line and rotates the files at line boundaries
// (so that no line is ever cut in two, lost or written twice), the names
// of the rotated files and their order, and the parsing of a line back
// into its time, stream and text.
//
// The guardian writes through it; the service and the command line read
// through it. It is a leaf: it knows nothing of agents or guardians, so
// that the guardian's small executable may link it.
package logfile
