// signnote makes a log key and signs checkpoints with Go's golang.org/x/mod/sumdb/note, a log that is not
// ours, for our witness to cosign. Usage: signnote gen NAME (prints the signer key, then the verifier key,
// one a line) or signnote sign SKEY_FILE TEXT_FILE (prints the signed note).
package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "gen" {
		skey, vkey, err := note.GenerateKey(rand.Reader, os.Args[2])
		if err != nil {
			fail(err)
		}
		fmt.Println(skey)
		fmt.Println(vkey)
		return
	}
	if len(os.Args) != 4 || os.Args[1] != "sign" {
		fmt.Fprintln(os.Stderr, "usage: signnote gen NAME | signnote sign SKEY_FILE TEXT_FILE")
		os.Exit(2)
	}
	skey, err := os.ReadFile(os.Args[2])
	if err != nil {
		fail(err)
	}
	text, err := os.ReadFile(os.Args[3])
	if err != nil {
		fail(err)
	}
	signer, err := note.NewSigner(strings.TrimSpace(string(skey)))
	if err != nil {
		fail(err)
	}
	signed, err := note.Sign(&note.Note{Text: string(text)}, signer)
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(signed)
}
