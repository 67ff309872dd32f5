package main

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"

	"github.com/IBM/sarama"
)

// saslConfig authenticates with --sasl-mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) as
// --sasl-user / --sasl-password; nothing without --sasl-mechanism.
func saslConfig(cfg *sarama.Config, get func(name, def string) string) {
	mechanism := get("sasl-mechanism", "")
	if mechanism == "" {
		return
	}
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Handshake = true
	cfg.Net.SASL.User = get("sasl-user", "")
	cfg.Net.SASL.Password = get("sasl-password", "")
	switch mechanism {
	case "PLAIN":
		cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case "SCRAM-SHA-256":
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: sha256.New} }
	case "SCRAM-SHA-512":
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: sha512.New} }
	default:
		fail(fmt.Errorf("--sasl-mechanism %s: not supported", mechanism))
	}
}

// scramClient is RFC 5802's client side (sarama leaves it to the application): client-first,
// client-final with the proof, then the server signature checked.
type scramClient struct {
	hash               func() hash.Hash
	user, password     string
	nonce, clientFirst string
	serverSignature    []byte
	step               int
	done               bool
}

func (c *scramClient) Begin(user, password, _ string) error {
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	c.user, c.password = user, password
	c.nonce = base64.RawStdEncoding.EncodeToString(raw)
	name := strings.NewReplacer("=", "=3D", ",", "=2C").Replace(user)
	c.clientFirst = "n=" + name + ",r=" + c.nonce
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) {
	c.step++
	switch c.step {
	case 1:
		return "n,," + c.clientFirst, nil
	case 2:
		return c.final(challenge)
	case 3:
		attrs := attributes(challenge)
		signature, err := base64.StdEncoding.DecodeString(attrs["v"])
		if err != nil || !hmac.Equal(signature, c.serverSignature) {
			return "", fmt.Errorf("scram: bad server signature %q", challenge)
		}
		c.done = true
		return "", nil
	}
	return "", fmt.Errorf("scram: unexpected step %d", c.step)
}

func (c *scramClient) final(serverFirst string) (string, error) {
	attrs := attributes(serverFirst)
	if !strings.HasPrefix(attrs["r"], c.nonce) {
		return "", fmt.Errorf("scram: server nonce %q does not extend ours", attrs["r"])
	}
	salt, err := base64.StdEncoding.DecodeString(attrs["s"])
	if err != nil {
		return "", err
	}
	iterations, err := strconv.Atoi(attrs["i"])
	if err != nil {
		return "", err
	}
	salted, err := pbkdf2.Key(c.hash, c.password, salt, iterations, c.hash().Size())
	if err != nil {
		return "", err
	}
	clientKey := c.mac(salted, "Client Key")
	h := c.hash()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	withoutProof := "c=biws,r=" + attrs["r"]
	authMessage := c.clientFirst + "," + serverFirst + "," + withoutProof
	signature := c.mac(storedKey, authMessage)
	proof := make([]byte, len(clientKey))
	for i := range clientKey {
		proof[i] = clientKey[i] ^ signature[i]
	}
	c.serverSignature = c.mac(c.mac(salted, "Server Key"), authMessage)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

func (c *scramClient) mac(key []byte, message string) []byte {
	m := hmac.New(c.hash, key)
	m.Write([]byte(message))
	return m.Sum(nil)
}

func (c *scramClient) Done() bool { return c.done }

func attributes(message string) map[string]string {
	out := map[string]string{}
	for _, field := range strings.Split(message, ",") {
		if k, v, ok := strings.Cut(field, "="); ok {
			out[k] = v
		}
	}
	return out
}
