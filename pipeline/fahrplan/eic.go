package fahrplan

import (
	"github.com/schedbridge/schedbridge/pipeline"
)

// ControlAreaEIC maps each control area to its EIC Y code, the value of
// InArea/OutArea in a schedule. These are defaults; deployments configure them.
var ControlAreaEIC = map[pipeline.ControlArea]string{
	pipeline.FiftyHertz: "10YDE-VE-------2",
	pipeline.Amprion:    "10YDE-RWENET---I",
	pipeline.TenneT:     "10YDE-EON------1",
	pipeline.TransnetBW: "10YDE-ENBW-----N",
}

// DefaultTSOParty maps each control area to the party EIC (X code) of its TSO,
// the receiver of a schedule. Amprion, TenneT and 50Hertz are the receivers and
// senders seen in the reference files. TransnetBW's code 10XDE-ENBW--TNGX is
// listed for "TransnetBW GmbH" in ENTSO-E's X_eicCodes list (as quoted in the
// krose/entsoeapi vignette and in the farao/OpenRAO TsoEICode table) and is the
// sender of an ESS acknowledgement in the schleupen test data; its check
// character is valid. These are defaults; deployments configure them.
var DefaultTSOParty = map[pipeline.ControlArea]string{
	pipeline.FiftyHertz: "10XDE-VE-TRANSMK",
	pipeline.Amprion:    "10XDE-RWENET---W",
	pipeline.TenneT:     "10XDE-EON-NETZ-C",
	pipeline.TransnetBW: "10XDE-ENBW--TNGX",
}
