package registry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/operator-publish/publish/internal/errclass"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Flags are the flag names of the command that runs, so that an error
// tells the user what to type (push has --username,
// run has --dst-username). An empty name means the command has no such
// flag: the advice then leaves it out.
type Flags struct {
	// Src and Dst are the credential flags of each side.
	Src, Dst CredentialFlags
	// Registry names the destination registry (--dst-registry, --dst-repo).
	Registry string
	// CA, Insecure and PlainHTTP are the TLS flags: --ca-file, --insecure,
	// --plain-http.
	CA, Insecure, PlainHTTP string
}

// CredentialFlags are the user name and password flags of one side.
type CredentialFlags struct {
	Username, Password string
}

func (f CredentialFlags) String() string {
	switch {
	case f.Username != "" && f.Password != "":
		return f.Username + "/" + f.Password
	case f.Password != "":
		return f.Password
	}
	return f.Username
}

// RunFlags are the registry flags of publish run, plan and mirror.
var RunFlags = Flags{
	Src:      CredentialFlags{"--src-username", "--src-password"},
	Dst:      CredentialFlags{"--dst-username", "--dst-password"},
	Registry: "--dst-registry",
	CA:       "--ca-file", Insecure: "--insecure", PlainHTTP: "--plain-http",
}

// SourceFlags are the registry flags of the commands that only read from
// source registries: publish package, create and lint (no destination,
// no --insecure).
var SourceFlags = Flags{
	Src: CredentialFlags{"--src-username", "--src-password"},
	CA:  "--ca-file", PlainHTTP: "--plain-http",
}

func (f Flags) registry() string {
	if f.Registry == "" {
		return "the destination registry"
	}
	return f.Registry
}

func (f Flags) ca() string {
	if f.CA == "" {
		return "the CA file"
	}
	return f.CA
}

// Kind classifies a registry error by what the user should do about it.
type Kind int

const (
	KindOther        Kind = iota
	KindUnauthorized      // 401: the credentials were refused
	KindForbidden         // 403: the account lacks the rights
	KindNotFound          // 404, MANIFEST_UNKNOWN, NAME_UNKNOWN
	KindUnknownAuthority
	KindHostname    // the certificate does not name the host
	KindCertificate // expired, not yet valid, not for TLS servers…
	KindTLS         // another TLS failure (handshake, alert)
	KindPlainHTTP   // HTTPS was spoken to a plain-HTTP port
	KindUnreachable // refused, unknown host, network down
	KindTimeout     // no response in time
	// KindDigestMismatch: a registry served bytes that are not those of
	// the digest asked for (*DigestMismatchError): the image is corrupt
	// there, or something between rewrites it.
	KindDigestMismatch
	// KindLocalDisk: this machine's disk is full or over its quota
	// (ENOSPC, EDQUOT): no registry is at fault.
	KindLocalDisk
)

// Side is the end of a copy an operation talks to.
type Side int

const (
	Source Side = iota
	Destination
)

// SideError marks Err as the failure of an operation on Side: a read of
// a source on the destination's host is the source's, and Describe names
// the source's flags for it.
type SideError struct {
	Side Side
	Err  error
}

func (e *SideError) Error() string { return e.Err.Error() }
func (e *SideError) Unwrap() error { return e.Err }

// OnSide is err marked as side's (a *SideError); nil stays nil.
func OnSide(side Side, err error) error {
	if err == nil {
		return nil
	}
	return &SideError{Side: side, Err: err}
}

// Operations named by the client itself.
const (
	OpCheckPush = "checking push access to the destination"
)

// Error is a registry failure with what was being done (Op), the
// registry host, its Kind and what to do (Hint, naming the flags of the
// command that runs). It wraps the error of go-containerregistry.
type Error struct {
	Op   string
	Host string
	Side Side
	Kind Kind
	Hint string
	Err  error
}

func (e *Error) Error() string {
	if e.Hint == "" {
		return fmt.Sprintf("%s: %s: %v", e.Op, e.Host, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Op, e.Hint, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorClass implements errclass.Classified: credentials or rights refused,
// a TLS setup to fix, a registry unreachable, too slow, lying about a
// digest, or this machine's disk full are the infrastructure's (exit 2,
// even inside an input error); another answer (an image that does not
// exist) leaves the class to the error around it.
func (e *Error) ErrorClass() errclass.Class {
	switch e.Kind {
	case KindUnauthorized, KindForbidden, KindUnknownAuthority, KindHostname, KindCertificate, KindTLS,
		KindPlainHTTP, KindUnreachable, KindTimeout, KindDigestMismatch, KindLocalDisk:
		return errclass.Infrastructure
	}
	return errclass.None
}

// Auth reports whether the registry refused the credentials or the rights
// (401, 403): trying again cannot help.
func (e *Error) Auth() bool { return e.Kind == KindUnauthorized || e.Kind == KindForbidden }

// IsAuth reports whether err is an authorisation failure: a 401 or 403
// answer, or the UNAUTHORIZED or DENIED error code, however wrapped.
func IsAuth(err error) bool {
	var re *Error
	if errors.As(err, &re) && re.Auth() {
		return true
	}
	k := Classify(err)
	return k == KindUnauthorized || k == KindForbidden
}

// NeedsFix reports whether err is one that running the same command
// again cannot get past: refused credentials or rights (IsAuth), or a TLS
// setup to fix (an unknown authority, a certificate that does not fit,
// HTTPS spoken to a plain-HTTP port). An error that may be transient (a
// network failure, a timeout, a 5xx) or is unknown reports false.
func NeedsFix(err error) bool {
	if IsAuth(err) {
		return true
	}
	switch Classify(err) {
	case KindUnknownAuthority, KindHostname, KindCertificate, KindTLS, KindPlainHTTP, KindLocalDisk:
		return true
	}
	return false
}

// IsNotFound reports whether err is a registry answer saying that the
// manifest or repository does not exist (HTTP 404, MANIFEST_UNKNOWN,
// NAME_UNKNOWN).
func IsNotFound(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		if te.StatusCode == http.StatusNotFound {
			return true
		}
		for _, d := range te.Errors {
			if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
				return true
			}
		}
	}
	return false
}

// Classify returns the Kind of a registry error from its type: a
// transport.Error's status and codes, the x509 errors, a
// tls.RecordHeaderError or http.ErrSchemeMismatch (HTTPS to an HTTP
// port), other TLS errors, and the net and url errors.
func Classify(err error) Kind {
	if err == nil {
		return KindOther
	}
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var rh tls.RecordHeaderError
	var ae tls.AlertError
	var cv *tls.CertificateVerificationError
	var to *timeoutError
	var dns *net.DNSError
	var op *net.OpError
	var ue *url.Error
	var ne net.Error
	var dm *DigestMismatchError
	switch {
	case errors.As(err, &dm):
		return KindDigestMismatch
	case localDisk(err):
		return KindLocalDisk
	case errors.As(err, &ua):
		return KindUnknownAuthority
	case errors.As(err, &he):
		return KindHostname
	case errors.As(err, &ci):
		return KindCertificate
	case errors.Is(err, http.ErrSchemeMismatch), errors.As(err, &rh):
		return KindPlainHTTP
	case errors.As(err, &cv), errors.As(err, &ae):
		return KindTLS
	}
	// A registry answer. After the TLS checks: go-containerregistry's ping
	// of a loopback registry tries HTTPS, then HTTP, and joins both
	// failures, the certificate one first.
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized:
			return KindUnauthorized
		case http.StatusForbidden:
			return KindForbidden
		}
		if IsNotFound(err) {
			return KindNotFound
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.UnauthorizedErrorCode:
				return KindUnauthorized
			case transport.DeniedErrorCode:
				return KindForbidden
			}
		}
		return KindOther
	}
	switch {
	case errors.As(err, &to):
		return KindTimeout
	case errors.As(err, &dns), errors.As(err, &op), errors.As(err, &ue), errors.As(err, &ne):
		if errors.As(err, &ne) && ne.Timeout() {
			return KindTimeout
		}
		return KindUnreachable
	}
	return KindOther
}

// Describe wraps err, from operation op on the registry host, as an
// *Error that says what to do with the flags of the client's command. The
// host is the one of the request that failed when err names it (a
// transport.Error's request, a *url.Error), else host; the side is the
// destination when that host is Options.DstHost, else the source (a
// token service of the destination on a host of its own counts as a
// source).
// An err that is an *Error already is returned as it is.
func (c *Client) Describe(op, host string, err error) error {
	var dm *DigestMismatchError
	if errors.As(err, &dm) && dm.Host != "" {
		// The source lied while the destination was being written.
		return DescribeSide(c.opts.Flags, Source, op, dm.Host, err)
	}
	if h := errHost(err); h != "" {
		host = h // the registry that failed: a copy reads the source too
	}
	side := Source
	var se *SideError
	switch {
	case errors.As(err, &se):
		side = se.Side // the operation knew: a source on the destination's host
	case c.dstReg != "" && (host == c.dstReg || host == c.opts.DstHost):
		side = Destination
	}
	return DescribeSide(c.opts.Flags, side, op, host, err)
}

// DescribeSide is Describe for a side given by the caller, with the flags
// f (the zero value: RunFlags).
func DescribeSide(f Flags, side Side, op, host string, err error) error {
	if err == nil {
		return nil
	}
	var re *Error
	if errors.As(err, &re) {
		return err
	}
	if f == (Flags{}) {
		f = RunFlags
	}
	k := Classify(err)
	switch k {
	case KindUnknownAuthority, KindHostname, KindCertificate, KindTLS:
		err = onlyPart(err, k)
	}
	return &Error{Op: op, Host: host, Side: side, Kind: k, Hint: hint(f, side, k, host), Err: err}
}

// onlyPart narrows err, when it joins several failures (go-containerregistry
// pings a loopback or --insecure registry over HTTPS and then over plain
// HTTP, and joins both errors with "; "), to the parts of kind k: the
// certificate failure without the plain-HTTP retry's answer, which only
// misleads when the registry speaks HTTPS. The result still wraps err
// (errors.Is and errors.As see every part); err is returned as it is when
// it joins nothing or no part is of kind k.
func onlyPart(err error, k Kind) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		parts := joined(e)
		if len(parts) < 2 {
			continue
		}
		var keep []string
		for _, p := range parts {
			if Classify(p) == k {
				keep = append(keep, p.Error())
			}
		}
		if len(keep) == 0 || len(keep) == len(parts) {
			return err
		}
		msg := strings.Replace(err.Error(), e.Error(), strings.Join(keep, "; "), 1)
		return &narrowedError{msg: msg, err: err}
	}
	return err
}

// joined returns the errors e joins: those of Unwrap() []error (errors.Join)
// or of a slice of errors (go-containerregistry's unexported multierrs).
func joined(e error) []error {
	if j, ok := e.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	v := reflect.ValueOf(e)
	if v.Kind() != reflect.Slice {
		return nil
	}
	var out []error
	for i := range v.Len() {
		p, ok := v.Index(i).Interface().(error)
		if !ok || p == nil {
			return nil
		}
		out = append(out, p)
	}
	return out
}

// narrowedError is an error shown as msg (a part of err's text) that
// unwraps to err.
type narrowedError struct {
	msg string
	err error
}

func (e *narrowedError) Error() string { return e.msg }
func (e *narrowedError) Unwrap() error { return e.err }

// hint is the advice for an error of kind k at host.
func hint(f Flags, side Side, k Kind, host string) string {
	or := func(parts ...string) string {
		var out []string
		for _, p := range parts {
			if p != "" {
				out = append(out, p)
			}
		}
		return strings.Join(out, ", or ")
	}
	pass := func(flag, what string) string {
		if flag == "" {
			return ""
		}
		return "pass " + flag + what
	}
	switch k {
	case KindUnauthorized:
		creds := f.Src
		if side == Destination {
			creds = f.Dst
		}
		check := "the docker config"
		if s := creds.String(); s != "" {
			check = s + " or the docker config"
		}
		return fmt.Sprintf("%s refused the credentials (401): check %s", host, check)
	case KindForbidden:
		rights := "pull"
		if side == Destination {
			rights = "push"
		}
		return fmt.Sprintf("%s denied access (403): the account needs %s rights on this repository", host, rights)
	case KindNotFound:
		return "not found at " + host
	case KindUnknownAuthority:
		return fmt.Sprintf("the certificate of %s is signed by an unknown authority: %s", host, or(pass(f.CA, " with the CA that signed it"), pass(f.Insecure, " to skip verification")))
	case KindHostname:
		return fmt.Sprintf("the certificate of %s is not valid for that name: use the name the certificate holds%s", host, prefixOr(pass(f.Insecure, " to skip verification")))
	case KindCertificate:
		return fmt.Sprintf("the certificate of %s is not valid (expired, not yet valid or not for a server): renew it%s", host, prefixOr(pass(f.Insecure, " to skip verification")))
	case KindTLS:
		return fmt.Sprintf("TLS with %s failed: %s", host, or(pass(f.CA, " with its CA"), pass(f.PlainHTTP, " for an HTTP registry")))
	case KindPlainHTTP:
		if f.PlainHTTP == "" {
			return host + " speaks plain HTTP, not HTTPS"
		}
		return host + " speaks plain HTTP: pass " + f.PlainHTTP
	case KindUnreachable:
		extra := ""
		if f.PlainHTTP != "" {
			extra = " and " + f.PlainHTTP
		}
		return fmt.Sprintf("cannot reach registry %s (check the host, port, network%s)", host, extra)
	case KindTimeout:
		return fmt.Sprintf("%s did not answer in time", host)
	case KindDigestMismatch:
		return fmt.Sprintf("%s served bytes that do not match their digest: the image is corrupt there, or a proxy between rewrites it; push it again at the source, or fix the proxy", host)
	case KindLocalDisk:
		return fmt.Sprintf("this machine's disk is full (no registry is at fault): free space in %s, or point TMPDIR (and --temp-dir, --cache) at a larger disk", os.TempDir())
	}
	return ""
}

func prefixOr(s string) string {
	if s == "" {
		return ""
	}
	return ", or " + s
}

// errHost returns the host of the request that err reports, or "".
func errHost(err error) string {
	var te *transport.Error
	if errors.As(err, &te) && te.Request != nil && te.Request.URL != nil {
		return te.Request.URL.Host
	}
	var to *timeoutError
	if errors.As(err, &to) {
		if u, perr := url.Parse(to.url); perr == nil {
			return u.Host
		}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return u.Host
		}
	}
	return ""
}
