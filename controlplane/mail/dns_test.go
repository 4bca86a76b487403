package mail

import "testing"

func TestRecordStatus(t *testing.T) {
	const pub = "MIIBIjANBg"
	for _, c := range []struct {
		name string
		txts []string
		want string
	}{
		{"none", nil, StatusMissing},
		{"exact", []string{"v=DKIM1; k=rsa; p=" + pub}, StatusVerified},
		{"spaces inside the key", []string{"v=DKIM1; k=rsa; p=MIIBI jANBg"}, StatusVerified},
		{"no version tag", []string{"k=rsa; p=" + pub}, StatusVerified},
		{"another version", []string{"v=DKIM2; p=" + pub}, StatusMissing},
		{"another key", []string{"v=DKIM1; p=AAAA"}, StatusMismatch},
		{"revoked (empty p)", []string{"v=DKIM1; p="}, StatusMismatch},
		{"malformed then right", []string{"garbage", "v=DKIM1;;p=" + pub}, StatusVerified},
		{"duplicate tag", []string{"v=DKIM1; p=" + pub + "; p=" + pub}, StatusMissing},
	} {
		if got := dkimStatus(c.txts, pub); got != c.want {
			t.Errorf("dkim %s: %s, want %s", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		txts []string
		want string
	}{
		{"none", []string{"site-verification=x"}, StatusMissing},
		{"include", []string{"v=spf1 include:relay.test ~all"}, StatusVerified},
		{"plus qualifier, case, trailing dot", []string{"V=SPF1 a mx +INCLUDE:Relay.Test. -all"}, StatusVerified},
		{"another include", []string{"v=spf1 include:relay.test.evil ~all"}, StatusMismatch},
		{"soft include is not a pass", []string{"v=spf1 ~include:relay.test -all"}, StatusMismatch},
		{"two records", []string{"v=spf1 include:relay.test ~all", "v=spf1 -all"}, StatusMismatch},
		{"v=spf10 is not SPF", []string{"v=spf10 include:relay.test"}, StatusMissing},
	} {
		if got, _ := spfStatus(c.txts, "relay.test"); got != c.want {
			t.Errorf("spf %s: %s, want %s", c.name, got, c.want)
		}
	}
}

// FuzzRecords: TXT records are whatever a domain's owner published; the
// readers of DKIM and SPF records never panic and only say verified when
// the record carries what is asked for.
func FuzzRecords(f *testing.F) {
	for _, s := range []string{"v=DKIM1; k=rsa; p=MIIB", "v=spf1 include:relay.test ~all", ";;=;", "p", "v=spf1", "p= M I I B ;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if dkimStatus([]string{s}, "MIIB") == StatusVerified {
			if tags, ok := parseTags(s); !ok || removeSpace(tags["p"]) != "MIIB" {
				t.Fatalf("%q verified DKIM without the key", s)
			}
		}
		if st, _ := spfStatus([]string{s}, "relay.test"); st == StatusVerified && !isSPF(s) {
			t.Fatalf("%q verified SPF without being SPF", s)
		}
	})
}
