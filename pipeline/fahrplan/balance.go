package fahrplan

// Balance sums the message's series per quarter-hour into the energy that
// flows into party's balancing group (bought: party is the InParty) and out
// of it (sold: party is the OutParty), in MW. A series between two other
// parties counts for neither; a series from party to itself for both.
func (m Message) Balance(party string) (bought, sold []float64) {
	n := m.Day.Intervals()
	bought, sold = make([]float64, n), make([]float64, n)
	for _, s := range m.Series {
		for i, q := range s.Quantities {
			if i >= n {
				break
			}
			if s.InParty == party {
				bought[i] += q
			}
			if s.OutParty == party {
				sold[i] += q
			}
		}
	}
	return bought, sold
}
