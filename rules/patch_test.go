package rules

import (
	"strings"
	"testing"
)

func TestDecodeSettingsPatch(t *testing.T) {
	saved := DefaultSettings()
	saved.BlockedCountries = []string{"RU"}
	saved.DenyIPs = []string{"192.0.2.0/24"}
	saved.LogOnly = true

	tests := []struct {
		name  string
		body  string
		want  func(*Settings) // applied to a copy of saved; nil with field set
		field string          // want an error naming this setting
		index int
		msg   string
	}{
		{name: "empty object changes nothing", body: `{}`, want: func(*Settings) {}},
		{name: "spaces around the object", body: " \n{ } \n", want: func(*Settings) {}},
		{name: "one flag", body: `{"enabled":false}`, want: func(s *Settings) { s.Enabled = false }},
		{name: "every setting", body: `{"enabled":true,"blockedCountries":["cn"," us "],"denyIps":["10.0.0.0/8"],"allowIps":["::ffff:10.1.2.3"],"blockAiCrawlers":true,"logOnly":false}`,
			want: func(s *Settings) {
				s.BlockedCountries = []string{"CN", "US"}
				s.DenyIPs = []string{"10.0.0.0/8"}
				s.AllowIPs = []string{"10.1.2.3"}
				s.BlockAICrawlers, s.LogOnly = true, false
			}},
		{name: "list replaces, not appends", body: `{"denyIps":["2001:db8::/32"]}`, want: func(s *Settings) { s.DenyIPs = []string{"2001:db8::/32"} }},
		{name: "null empties a list", body: `{"blockedCountries":null}`, want: func(s *Settings) { s.BlockedCountries = []string{} }},
		{name: "empty list", body: `{"denyIps":[]}`, want: func(s *Settings) { s.DenyIPs = []string{} }},
		{name: "duplicates dropped", body: `{"blockedCountries":["RU","ru","RU"]}`, want: func(*Settings) {}},

		{name: "unknown setting", body: `{"enabled":true,"blockBots":true}`, field: "blockBots", index: -1, msg: "unknown setting"},
		{name: "unknown setting reported before bad values", body: `{"denyIps":["x"],"zzz":1}`, field: "zzz", index: -1, msg: "unknown setting"},
		{name: "case variant is unknown", body: `{"Enabled":false}`, field: "Enabled", index: -1, msg: "unknown setting"},
		{name: "snake case is unknown", body: `{"deny_ips":[]}`, field: "deny_ips", index: -1, msg: "unknown setting"},
		{name: "passwords are not a rule setting", body: `{"passwords":{"site":"pw"}}`, field: "passwords", index: -1, msg: "their own"},
		{name: "read-only answer field", body: `{"protectedSites":[]}`, field: "protectedSites", index: -1, msg: "unknown setting"},
		{name: "bool as string", body: `{"enabled":"yes"}`, field: "enabled", index: -1, msg: "true or false"},
		{name: "bool as null", body: `{"logOnly":null}`, field: "logOnly", index: -1, msg: "true or false"},
		{name: "bool as number", body: `{"blockAiCrawlers":1}`, field: "blockAiCrawlers", index: -1, msg: "true or false"},
		{name: "list as string", body: `{"denyIps":"10.0.0.1"}`, field: "denyIps", index: -1, msg: "array of strings"},
		{name: "list of numbers", body: `{"blockedCountries":[1]}`, field: "blockedCountries", index: -1, msg: "array of strings"},
		{name: "list with null", body: `{"allowIps":["10.0.0.1",null]}`, field: "allowIps", index: -1, msg: "array of strings"},
		{name: "bad country", body: `{"blockedCountries":["FR","UK"]}`, field: "blockedCountries", index: 1, msg: "GB"},
		{name: "bad address", body: `{"denyIps":["10.0.0.1","10.0.0.256"]}`, field: "denyIps", index: 1, msg: "not an address"},
		{name: "bad allow range", body: `{"allowIps":["10.0.0.1/8"]}`, field: "allowIps", index: 0, msg: "10.0.0.0/8"},

		{name: "not an object", body: `[]`, index: -1, msg: "JSON object"},
		{name: "empty body", body: ``, index: -1, msg: "JSON object"},
		{name: "null body", body: `null`, index: -1, msg: "JSON object"},
		{name: "broken JSON", body: `{"enabled":`, index: -1, msg: "not valid JSON"},
		{name: "two objects", body: `{}{}`, index: -1, msg: "one JSON object"},
		{name: "trailing garbage", body: `{} x`, index: -1, msg: "one JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeSettingsPatch(saved, []byte(tc.body))
			if tc.want == nil {
				checkValidationError(t, err, tc.field, tc.index, "", tc.msg)
				return
			}
			if err != nil {
				t.Fatalf("DecodeSettingsPatch = %v", err)
			}
			want := saved.Normalized()
			tc.want(&want)
			if !got.Equal(want) {
				t.Errorf("DecodeSettingsPatch =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
	if saved.DenyIPs[0] != "192.0.2.0/24" || !saved.LogOnly {
		t.Error("DecodeSettingsPatch changed saved")
	}
}

func TestDecodeSettingsPatchTooMany(t *testing.T) {
	body := `{"denyIps":[` + strings.Repeat(`"10.0.0.1",`, MaxAddressEntries) + `"10.0.0.2"]}`
	_, err := DecodeSettingsPatch(DefaultSettings(), []byte(body))
	checkValidationError(t, err, "denyIps", -1, "", "too many")
}
