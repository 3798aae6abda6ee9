//go:build !race

package writeset_test

const raceEnabled = false
