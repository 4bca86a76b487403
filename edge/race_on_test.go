//go:build race

package edge

// raceEnabled: the race detector's scheduler readies goroutines in a
// random order on purpose (runtime.randomizeScheduler).
const raceEnabled = true
