package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/scrypt"
)

// passwordEnv names the variable that holds the password of an encrypted
// key: the one cosign itself reads, so that a key of `cosign
// generate-key-pair` signs here as it does there.
const passwordEnv = "COSIGN_PASSWORD"

// loadKey reads the ECDSA P-256 private key of a PEM file: cosign's
// encrypted format (`cosign generate-key-pair`, password in
// COSIGN_PASSWORD), or an unencrypted PKCS #8 ("PRIVATE KEY") or SEC 1
// ("EC PRIVATE KEY") key. Errors never carry key material or the password.
func loadKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("signing key %s: not a PEM file (give cosign.key of `cosign generate-key-pair`, or a PKCS #8 EC P-256 key)", path)
	}
	var key any
	switch block.Type {
	case "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		password, ok := os.LookupEnv(passwordEnv)
		if !ok {
			return nil, fmt.Errorf("signing key %s is encrypted: give its password in %s", path, passwordEnv)
		}
		der, err := decryptCosignKey(block.Bytes, []byte(password))
		if err != nil {
			return nil, fmt.Errorf("signing key %s: %w", path, err)
		}
		key, err = x509.ParsePKCS8PrivateKey(der)
		if err != nil {
			return nil, fmt.Errorf("signing key %s: decrypted, but not a PKCS #8 key: %w", path, err)
		}
	case "PRIVATE KEY":
		if key, err = x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
			return nil, fmt.Errorf("signing key %s: %w", path, err)
		}
	case "EC PRIVATE KEY":
		if key, err = x509.ParseECPrivateKey(block.Bytes); err != nil {
			return nil, fmt.Errorf("signing key %s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("signing key %s: a PEM block %q, want ENCRYPTED SIGSTORE PRIVATE KEY, PRIVATE KEY or EC PRIVATE KEY", path, block.Type)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("signing key %s: not an ECDSA P-256 key (what cosign generate-key-pair writes)", path)
	}
	return ec, nil
}

// decryptCosignKey opens cosign's encrypted private key: JSON naming a
// scrypt key derivation (salt, N, r, p) and a NaCl secretbox (nonce) that
// seals the PKCS #8 key.
func decryptCosignKey(sealed, password []byte) ([]byte, error) {
	var box struct {
		KDF struct {
			Name   string
			Params struct{ N, R, P int }
			Salt   []byte
		}
		Cipher struct {
			Name  string
			Nonce []byte
		}
		Ciphertext []byte
	}
	if err := json.Unmarshal(sealed, &box); err != nil {
		return nil, fmt.Errorf("encrypted key: %w", err)
	}
	if box.KDF.Name != "scrypt" || box.Cipher.Name != "nacl/secretbox" || len(box.Cipher.Nonce) != 24 {
		return nil, fmt.Errorf("encrypted key: kdf %q and cipher %q, want scrypt and nacl/secretbox", box.KDF.Name, box.Cipher.Name)
	}
	if box.KDF.Params.N > 1<<20 || box.KDF.Params.R > 16 || box.KDF.Params.P > 4 {
		return nil, errors.New("encrypted key: scrypt parameters beyond cosign's")
	}
	k, err := scrypt.Key(password, box.KDF.Salt, box.KDF.Params.N, box.KDF.Params.R, box.KDF.Params.P, 32)
	if err != nil {
		return nil, fmt.Errorf("encrypted key: %w", err)
	}
	var key [32]byte
	var nonce [24]byte
	copy(key[:], k)
	copy(nonce[:], box.Cipher.Nonce)
	der, ok := secretbox.Open(nil, box.Ciphertext, &nonce, &key)
	if !ok {
		return nil, fmt.Errorf("encrypted key: wrong password (%s)", passwordEnv)
	}
	return der, nil
}

// publicKeyPEM is the PEM ("PUBLIC KEY", PKIX) of pub, as cosign.pub holds it.
func publicKeyPEM(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// loadPublicKey reads an ECDSA public key from a PEM file (cosign.pub).
func loadPublicKey(path string) (*ecdsa.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("public key %s: want a PEM PUBLIC KEY block (cosign.pub)", path)
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key %s: %w", path, err)
	}
	ec, ok := key.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key %s: not an ECDSA key", path)
	}
	return ec, nil
}
