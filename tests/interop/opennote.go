// opennote opens a signed note with Go's golang.org/x/mod/sumdb/note (Debian's golang-golang-x-mod-dev),
// an implementation independent of the ledger's. Usage: opennote NOTE LOG_VKEY [COSIGNER_VKEY ...]
//
// The log's key is an Ed25519 signed-note key, which the package knows. A cosigner key (C2SP
// tlog-cosignature, type 0x04) it does not: cosignatureVerifier below implements the spec's message
// ("cosignature/v1\ntime <t>\n" and the note's text) and key id (SHA-256 of name, "\n", 0x04, key) as a
// note.Verifier, so the package's own parsing, key matching and "unknown keys are ignored" rules apply.
// It prints each verified signature as "verified NAME [time T]", each unknown one as "unknown NAME".
package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

type cosignatureVerifier struct {
	name string
	hash uint32
	key  ed25519.PublicKey
	seen *uint64
}

func (v cosignatureVerifier) Name() string    { return v.name }
func (v cosignatureVerifier) KeyHash() uint32 { return v.hash }

func (v cosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	signed := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), msg...)
	if !ed25519.Verify(v.key, signed, sig[8:]) {
		return false
	}
	*v.seen = t
	return true
}

func newCosignatureVerifier(vkey string) (cosignatureVerifier, error) {
	parts := strings.SplitN(strings.TrimSpace(vkey), "+", 3)
	if len(parts) != 3 {
		return cosignatureVerifier{}, errors.New("malformed cosigner key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 0x04 {
		return cosignatureVerifier{}, errors.New("not a cosignature/v1 key (type 0x04)")
	}
	sum := sha256.Sum256(append([]byte(parts[0]+"\n"), raw...))
	hash := binary.BigEndian.Uint32(sum[:4])
	if want, err := strconv.ParseUint(parts[1], 16, 32); err != nil || uint32(want) != hash {
		return cosignatureVerifier{}, errors.New("key hash does not match the key")
	}
	return cosignatureVerifier{parts[0], hash, ed25519.PublicKey(raw[1:]), new(uint64)}, nil
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: opennote NOTE LOG_VKEY [COSIGNER_VKEY ...]")
		os.Exit(2)
	}
	msg, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logKey, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logVerifier, err := note.NewVerifier(strings.TrimSpace(string(logKey)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "log key:", err)
		os.Exit(2)
	}
	verifiers := []note.Verifier{logVerifier}
	cosigners := map[string]cosignatureVerifier{}
	for _, name := range os.Args[3:] {
		text, err := os.ReadFile(name)
		if err == nil {
			var v cosignatureVerifier
			if v, err = newCosignatureVerifier(string(text)); err == nil {
				verifiers = append(verifiers, v)
				cosigners[v.name] = v
				continue
			}
		}
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	n, err := note.Open(msg, note.VerifierList(verifiers...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(1)
	}
	fmt.Print(n.Text)
	for _, sig := range n.Sigs {
		if v, ok := cosigners[sig.Name]; ok {
			fmt.Printf("verified %s time %d\n", sig.Name, *v.seen)
		} else {
			fmt.Printf("verified %s\n", sig.Name)
		}
	}
	for _, sig := range n.UnverifiedSigs {
		fmt.Printf("unknown %s\n", sig.Name)
	}
}
