//go:build race

package vectors

const raceEnabled = true
