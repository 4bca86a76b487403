package rtmp

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	c := Config{Module: DefaultModule, Dir: "/data/media/live", Listen: "127.0.0.1:1935", Notify: "http://127.0.0.1:7070/media/live/hooks/s"}
	conf := c.Render()
	for _, want := range []string{
		"load_module \"" + DefaultModule + "\";", "daemon off;", "listen 127.0.0.1:1935;",
		"application live {", "on_publish \"http://127.0.0.1:7070/media/live/hooks/s/publish\";", "notify_update_strict on;",
		"application hls {", "deny publish all;", "hls_path \"/data/media/live/hls\";", "hls_nested on;",
	} {
		if !strings.Contains(conf, want) {
			t.Fatalf("config lacks %q:\n%s", want, conf)
		}
	}
	if strings.Count(conf, "{") != strings.Count(conf, "}") {
		t.Fatalf("unbalanced:\n%s", conf)
	}
}
