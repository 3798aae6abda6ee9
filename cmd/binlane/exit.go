package main

import "errors"

// Exit statuses, the same for every command. Scripts rely on them
// (binlane verify && cutover), so a command never exits 0 unless it did
// what it was asked: an interrupted verify is 2, not 0.
const (
	exitOK     = 0 // success; verify: the servers are equal
	exitDiffer = 1 // verify (and demo): differences found
	exitFailed = 2 // an error, a bad flag, or an interruption that left no result
	// exitTimeout: cutover, wait and pause gave up after their --timeout
	// (cutover rolled back first).
	exitTimeout = 3
)

// exitHelp documents the statuses in the root command's help.
const exitHelp = `Exit status, for every command: 0 success (verify: equal), 1 differences
found (verify), 2 error, bad usage, or interrupted before a result, 3 a
--timeout ran out (cutover, after rolling back; wait; pause).
replicate stopped by SIGINT/SIGTERM (in-flight work finished, position
saved) and binlog dump ended by Ctrl-C exit 0: that is how they end.`

// codedError is an error with its own exit status; any other error exits
// with exitFailed.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// errReported is an outcome the command printed itself (status --check):
// the exit status says it, no "binlane: ..." line follows.
var errReported = errors.New("reported")

// exitQuietly ends the command with status code and prints nothing more.
func exitQuietly(code int) error { return &codedError{code: code, err: errReported} }

// withExitCode gives err the exit status code.
func withExitCode(code int, err error) error { return &codedError{code: code, err: err} }

// exitCode maps a command's result to the process's exit status.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if ce, ok := errors.AsType[*codedError](err); ok {
		return ce.code
	}
	return exitFailed
}
