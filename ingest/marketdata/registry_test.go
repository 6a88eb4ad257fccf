package marketdata

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

func TestParseRegistry(t *testing.T) {
	f, err := os.Open("testdata/registry/dsos.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ParseRegistry(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []mako.Partner{
		{MPID: "9900000000003", Name: "Stadtwerke Musterstadt GmbH", ControlArea: "TenneT",
			Emails: []string{"edi@sw-musterstadt.de", "marktkommunikation@sw-musterstadt.de"}, BalancingArea: "11YSWMUSTER----1"},
		{MPID: "9900000000027", Name: "Netze Süd; Bayern GmbH", ControlArea: "TransnetBW", Emails: []string{"mako@netze-sued.de"}},
		{MPID: "9900000000034", Name: "Ostnetz AG", ControlArea: "50Hertz", Emails: []string{"edifact@ostnetz.de"}},
	}
	if got.Skipped != 1 || len(got.Partners) != len(want) {
		t.Fatalf("got %d partners, %d skipped: %+v", len(got.Partners), got.Skipped, got.Partners)
	}
	for i := range want {
		g, w := got.Partners[i], want[i]
		if g.MPID != w.MPID || g.Name != w.Name || g.ControlArea != w.ControlArea || g.BalancingArea != w.BalancingArea || !slices.Equal(g.Emails, w.Emails) {
			t.Errorf("partner %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestParseRegistryLatin1AndComma(t *testing.T) {
	// "Gebrüder" in ISO-8859-1: ü is the single byte 0xFC.
	data := "mp_id,name,email\n9900000000041,Gebr\xfcder Netz GmbH,a@b.de\n"
	got, err := ParseRegistry(strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Partners) != 1 || got.Partners[0].Name != "Gebrüder Netz GmbH" || got.Partners[0].ControlArea != "" {
		t.Fatalf("got %+v", got.Partners)
	}
}

func TestParseRegistryErrors(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"empty", "", "empty"},
		{"missing column", "mp_id;name\n9900000000003;A\n", "missing column(s) email"},
		{"bad id", "mp_id;name;email\n99000003;A;a@b.de\n", "line 2: mp_id \"99000003\" is not a 13-digit"},
		{"duplicate", "mp_id;name;email\n9900000000003;A;a@b.de\n9900000000003;B;b@b.de\n", "line 3: mp_id 9900000000003 is listed twice (first on line 2)"},
		{"no name", "mp_id;name;email\n9900000000003;;a@b.de\n", "line 2: name is empty"},
		{"bad area", "mp_id;name;email;regelzone\n9900000000003;A;a@b.de;Tennet Nord\n", "regelzone \"Tennet Nord\""},
		{"bad mail", "mp_id;name;email\n9900000000003;A;not-a-mail\n", "email \"not-a-mail\""},
		{"bad eic", "mp_id;name;email;bilanzierungsgebiet\n9900000000003;A;a@b.de;11Y\n", "bilanzierungsgebiet \"11Y\""},
		{"only other roles", "mp_id;name;email;marktrolle\n9900000000003;A;a@b.de;LF\n", "no DSO rows"},
		{"quote", "mp_id;name;email\n9900000000003;\"A;a@b.de\n", "registry:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseRegistry(strings.NewReader(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) || pipeline.KindOf(err) != pipeline.Invalid {
				t.Fatalf("err = %v, want invalid containing %q", err, c.want)
			}
		})
	}
}
