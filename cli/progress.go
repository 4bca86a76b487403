package cli

import (
	"fmt"
	"io"
	"strings"
)

// bar draws an upload's progress on one terminal line.
type bar struct {
	w     io.Writer
	label string
	last  int // the percent drawn last, -1 before the first
}

func newBar(w io.Writer, label string) *bar { return &bar{w: w, label: label, last: -1} }

// update redraws the line when the percent changed.
func (b *bar) update(sent, total int64) {
	pct := 100
	if total > 0 {
		pct = int(sent * 100 / total)
	}
	if pct == b.last {
		return
	}
	b.last = pct
	const width = 30
	done := pct * width / 100
	fmt.Fprintf(b.w, "\r%s [%s%s] %3d%% %s / %s", b.label, strings.Repeat("=", done), strings.Repeat(" ", width-done), pct, mbytes(sent), mbytes(total))
}

// finish ends the bar's line.
func (b *bar) finish() {
	if b.last >= 0 {
		fmt.Fprintln(b.w)
	}
}
