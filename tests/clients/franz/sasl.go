package main

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslOpt authenticates with --sasl-mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) as
// --sasl-user / --sasl-password; nil without --sasl-mechanism.
func saslOpt(get func(name, def string) string) kgo.Opt {
	user, password := get("sasl-user", ""), get("sasl-password", "")
	switch mechanism := get("sasl-mechanism", ""); mechanism {
	case "":
		return nil
	case "PLAIN":
		return kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism())
	case "SCRAM-SHA-256":
		return kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha256Mechanism())
	case "SCRAM-SHA-512":
		return kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())
	default:
		fail(fmt.Errorf("--sasl-mechanism %s: not supported", mechanism))
		return nil
	}
}
