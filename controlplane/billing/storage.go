package billing

import "time"

// Storage overage, in the specification's words: "storage past the
// allowance on pro, team, scale: charged daily from the paying workspace's
// Balance at 1.00 dollar per GB per month; team's 20 dollar monthly usage
// credit pays first". A GB is 10^9 bytes (plans.GB).
const storageMicrosPerGBMonth = Dollar

// StorageOverageMicros is what bytesOver bytes past the allowance cost for
// one UTC day of a month that has daysInMonth days, at 1.00 dollar per GB
// per month:
//
//	floor(bytesOver × 1,000,000 / (10^9 × daysInMonth)) = floor(bytesOver / (1000 × daysInMonth))
//
// in integer arithmetic (no overflow for any int64 bytesOver). It rounds
// down, in the customer's favour: a month of daily charges for a constant
// overage falls short of the monthly price by less than one micro-dollar a
// day, and never exceeds it. Zero or negative overage costs nothing; a
// daysInMonth outside 28..31 is taken as 30.
func StorageOverageMicros(bytesOver int64, daysInMonth int) Micros {
	if bytesOver <= 0 {
		return 0
	}
	if daysInMonth < 28 || daysInMonth > 31 {
		daysInMonth = 30
	}
	const bytesPerMicro = 1_000_000_000 / int64(storageMicrosPerGBMonth) // 1000 bytes per micro-dollar-month
	return Micros(bytesOver / (bytesPerMicro * int64(daysInMonth)))
}

// DaysIn returns the number of days of t's UTC month.
func DaysIn(t time.Time) int {
	return monthStart(t).AddDate(0, 1, -1).Day()
}

// StorageRef is the charge reference of workspace storage overage for the
// UTC day of t, so that a retried daily charge is charged once.
func StorageRef(t time.Time) string { return "storage:" + t.UTC().Format("2006-01-02") }
