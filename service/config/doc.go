// Package config reads, validates and writes the tether agents config, the
// YAML file that lists the agents a user wants tether to run. Its keys and
// their rules are documented once, for the user, in default.yaml, the
// commented file "tether config init" writes (Default).
//
// It owns the file format and its rules: Load and Parse return either a
// fully validated *Config or errors that each name the file, the line and
// the key (*Error, or Errors when there are several; match them with
// errors.As, never by text). Default, DefaultPath and WriteDefault serve
// "tether config init".
//
// It must not start, stop or look for anything else: it never runs a
// command, never resolves argv[0] and never keeps secrets. A bare "tether"
// as argv[0] of a command means "this tether binary"; the service resolves
// it (os.Executable), not this package. The values of an env_file are
// checked at load time and then dropped; Agent.Environ reads the file again
// when the agent starts, so secrets live in memory only as long as the
// caller keeps the slice it returns.
//
// Paths: "~" and "~/..." in dir and env_file are expanded to the user's
// home directory; relative paths are taken relative to the directory of the
// config file as it was named (a symlinked config keeps its own directory).
//
// The service imports it, and the command line for "config init". It
// takes the restart policies from api and what an identity may be from
// identity.
package config
