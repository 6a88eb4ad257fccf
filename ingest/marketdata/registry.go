package marketdata

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"net/mail"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"

	"github.com/schedbridge/schedbridge/pipeline"
	"github.com/schedbridge/schedbridge/pipeline/mako"
)

// The partner registry is a CSV export of the DSOs of the BDEW code registry.
// Columns are found by header name (case-insensitive, in any order; the
// aliases are the export's own German headings), the separator is ';' or ','
// as the header line uses, and the file is UTF-8 (with or without BOM) or, as
// older exports are, ISO-8859-1. See docs/mako.md.
var registryColumns = map[string][]string{
	"mp_id":               {"mp_id", "bdew-codenummer", "codenummer", "mp-id", "marktpartner-id"},
	"name":                {"name", "unternehmen", "unternehmensname", "firmenname", "firma"},
	"regelzone":           {"regelzone", "control_area", "uenb", "übertragungsnetzbetreiber"},
	"email":               {"email", "e-mail", "e-mail-adresse", "email_marktkommunikation", "e-mail marktkommunikation"},
	"marktrolle":          {"marktrolle", "market_role", "rolle"},
	"bilanzierungsgebiet": {"bilanzierungsgebiet", "balancing_area", "bilanzierungsgebiet-eic"},
}

// registryRequired are the columns without which no row can be read.
var registryRequired = []string{"mp_id", "name", "email"}

// dsoRoles are the values of the optional role column that mean a DSO; rows
// of other roles (suppliers, metering operators) are skipped and counted.
var dsoRoles = []string{"nb", "vnb", "netzbetreiber", "verteilnetzbetreiber", "dso"}

// controlAreaEICs maps the control areas' EICs to their names, so that an
// export may name a control area either way.
var controlAreaEICs = map[string]string{
	"10YDE-ENBW-----N": "TransnetBW",
	"10YDE-EON------1": "TenneT",
	"10YDE-RWENET---I": "Amprion",
	"10YDE-VE-------2": "50Hertz",
}

// RegistryFile is a decoded registry export.
type RegistryFile struct {
	Partners []mako.Partner
	// Skipped counts rows of other market roles.
	Skipped int
}

// ParseRegistry decodes a registry CSV export. Every problem is reported with
// its line; one bad row rejects the whole file, so that an import never
// replaces the registry with a partial one.
func ParseRegistry(r io.Reader) (RegistryFile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return RegistryFile{}, fmt.Errorf("registry: read: %w", err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		// Older spreadsheet exports without a BOM are ISO-8859-1, where the
		// umlauts sit at the same code points.
		if data, err = charmap.ISO8859_1.NewDecoder().Bytes(data); err != nil {
			return RegistryFile{}, pipeline.Errorf(pipeline.Invalid, "registry: neither UTF-8 nor ISO-8859-1: %v", err)
		}
	}
	header, _, _ := bytes.Cut(data, []byte("\n"))
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comma = ','
	if bytes.Count(header, []byte(";")) > bytes.Count(header, []byte(",")) {
		cr.Comma = ';'
	}
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return RegistryFile{}, pipeline.Errorf(pipeline.Invalid, "registry: %v", err)
	}
	if len(rows) == 0 {
		return RegistryFile{}, pipeline.Errorf(pipeline.Invalid, "registry: the file is empty")
	}
	col := map[string]int{}
	for j, h := range rows[0] {
		h = strings.ToLower(strings.TrimSpace(h))
		for name, aliases := range registryColumns {
			if slices.Contains(aliases, h) {
				if _, dup := col[name]; dup {
					return RegistryFile{}, pipeline.Errorf(pipeline.Invalid, "registry: line 1: two columns mean %s", name)
				}
				col[name] = j
			}
		}
	}
	var missing []string
	for _, name := range registryRequired {
		if _, ok := col[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return RegistryFile{}, pipeline.Errorf(pipeline.Invalid,
			"registry: line 1: missing column(s) %s; found %s", strings.Join(missing, ", "), strings.Join(rows[0], ", "))
	}
	cell := func(row []string, name string) string {
		j, ok := col[name]
		if !ok || j >= len(row) {
			return ""
		}
		return strings.TrimSpace(row[j])
	}

	var out RegistryFile
	var problems []string
	seen := map[string]int{}
	for i, row := range rows[1:] {
		line := i + 2
		if blank(row) {
			continue
		}
		if role := strings.ToLower(cell(row, "marktrolle")); role != "" && !slices.Contains(dsoRoles, role) {
			out.Skipped++
			continue
		}
		p := mako.Partner{MPID: cell(row, "mp_id"), Name: cell(row, "name"), BalancingArea: strings.ToUpper(cell(row, "bilanzierungsgebiet"))}
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
		}
		if !mako.ValidMPID(p.MPID) {
			bad("mp_id %q is not a 13-digit BDEW code", p.MPID)
		} else if first, dup := seen[p.MPID]; dup {
			bad("mp_id %s is listed twice (first on line %d)", p.MPID, first)
		} else {
			seen[p.MPID] = line
		}
		if p.Name == "" {
			bad("name is empty")
		}
		if ca := cell(row, "regelzone"); ca != "" {
			name, ok := controlAreaEICs[strings.ToUpper(ca)]
			if !ok {
				for _, a := range pipeline.ControlAreas {
					if strings.EqualFold(string(a), ca) {
						name, ok = string(a), true
					}
				}
			}
			if !ok {
				bad("regelzone %q is none of 50Hertz, Amprion, TenneT, TransnetBW or their EICs", ca)
			}
			p.ControlArea = name
		}
		if p.BalancingArea != "" && !pipeline.ValidEIC(p.BalancingArea) {
			bad("bilanzierungsgebiet %q is not a 16-character EIC", p.BalancingArea)
		}
		for _, a := range strings.FieldsFunc(cell(row, "email"), func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
			addr, err := mail.ParseAddress(a)
			if err != nil || addr.Name != "" {
				bad("email %q is not an e-mail address", a)
				continue
			}
			if e := strings.ToLower(addr.Address); !slices.Contains(p.Emails, e) {
				p.Emails = append(p.Emails, e)
			}
		}
		if len(problems) >= 50 {
			break
		}
		out.Partners = append(out.Partners, p)
	}
	if len(problems) > 0 {
		return RegistryFile{}, pipeline.Errorf(pipeline.Invalid, "registry: %s", strings.Join(problems, "; "))
	}
	if len(out.Partners) == 0 {
		return RegistryFile{}, pipeline.Errorf(pipeline.Invalid, "registry: no DSO rows; an empty registry would remove every partner")
	}
	slices.SortFunc(out.Partners, func(a, b mako.Partner) int { return strings.Compare(a.MPID, b.MPID) })
	return out, nil
}

func blank(row []string) bool {
	for _, c := range row {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}
