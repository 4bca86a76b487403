package transcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestLadder(t *testing.T) {
	for _, tc := range []struct {
		h    int
		want string
	}{
		{1080, "[360p 720p]"},
		{720, "[360p 720p]"},
		{400, "[360p 400p]"},
		{360, "[360p]"},
		{241, "[240p]"},
		{2160, "[360p 720p]"},
		{1, "[2p]"},
	} {
		t.Run(fmt.Sprint(tc.h), func(t *testing.T) {
			var names []string
			for _, r := range Ladder(tc.h) {
				names = append(names, r.Name())
				if r.VideoKbps <= 0 || r.MaxKbps < r.VideoKbps {
					t.Fatalf("bitrates %+v", r)
				}
			}
			if got := fmt.Sprint(names); got != tc.want {
				t.Fatalf("Ladder(%d) = %s, want %s", tc.h, got, tc.want)
			}
		})
	}
}

func TestParseProbe(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		err        error
	}{
		{"video", `{"format":{"format_name":"mov","duration":"6.5"},"streams":[{"codec_type":"video","width":640,"height":360},{"codec_type":"audio"}]}`, nil},
		{"audio only", `{"format":{"format_name":"mp3","duration":"6.5"},"streams":[{"codec_type":"audio"}]}`, ErrNotVideo},
		{"picture", `{"format":{"format_name":"png_pipe"},"streams":[{"codec_type":"video","width":64,"height":64}]}`, ErrNotVideo},
		{"cover art only", `{"format":{"format_name":"mp3","duration":"3"},"streams":[{"codec_type":"video","width":64,"height":64,"disposition":{"attached_pic":1}}]}`, ErrNotVideo},
		{"no duration", `{"format":{"format_name":"mov"},"streams":[{"codec_type":"video","width":64,"height":64}]}`, ErrCorrupt},
		{"zero size", `{"format":{"format_name":"mov","duration":"1"},"streams":[{"codec_type":"video","width":0,"height":64}]}`, ErrCorrupt},
		{"not JSON", `garbage`, ErrNotVideo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProbe([]byte(tc.json))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if err == nil && (p.Height != 360 || !p.HasAudio || p.Duration.Seconds() != 6.5) {
				t.Fatalf("%+v", p)
			}
		})
	}
}
