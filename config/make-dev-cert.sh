#!/usr/bin/env bash
# Make a self-signed development certificate for Hubbub's TLS listener.
#
#   config/make-dev-cert.sh [--force] [OUTDIR]
#
# Writes OUTDIR/cert.pem and OUTDIR/key.pem (default OUTDIR: config/dev-cert under the
# repository root): an EC P-256 key and an X.509 v3 certificate for CN=localhost with
# subjectAltName DNS:localhost, IP:127.0.0.1, valid 825 days. Does nothing when both files
# already exist (and the certificate is still valid for a day), unless --force is given.
# For development and tests only.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

force=0
outdir=""
while (($# > 0)); do
    case "$1" in
        -f | --force) force=1 ;;
        -h | --help)
            sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        -*) echo "error: unknown option $1 (usage: $0 [--force] [OUTDIR])" >&2; exit 2 ;;
        *)
            [[ -z "$outdir" ]] || { echo "error: more than one OUTDIR given" >&2; exit 2; }
            outdir="$1"
            ;;
    esac
    shift
done
outdir="${outdir:-$REPO_ROOT/config/dev-cert}"

cert="$outdir/cert.pem"
key="$outdir/key.pem"

command -v openssl >/dev/null 2>&1 || {
    echo "error: the openssl command is missing (apt-get install openssl)" >&2
    exit 1
}

if ((force == 0)) && [[ -s "$cert" && -s "$key" ]]; then
    if openssl x509 -in "$cert" -noout -checkend 86400 >/dev/null 2>&1; then
        echo "dev certificate already present: $cert (use --force to remake it)"
        exit 0
    fi
    echo "dev certificate $cert is unreadable or expires within a day: remaking it"
fi

mkdir -p "$outdir"
tmp="$(mktemp -d "$outdir/.make-dev-cert.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# A leaf certificate that is its own issuer: CA:FALSE so browsers accept it as a server
# certificate, keyUsage/extendedKeyUsage for TLS server auth, and subject/authority key
# identifiers so strict X.509 verifiers (e.g. Python >= 3.13's default) accept it as a
# trust anchor too.
cat >"$tmp/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
x509_extensions = v3

[dn]
CN = localhost

[v3]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
EOF

timeout 60 openssl req -x509 -new -batch \
    -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -sha256 -days 825 \
    -config "$tmp/openssl.cnf" \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>"$tmp/err" || {
    echo "error: openssl req failed:" >&2
    cat "$tmp/err" >&2
    exit 1
}

chmod 600 "$tmp/key.pem"
chmod 644 "$tmp/cert.pem"
mv -f "$tmp/key.pem" "$key"
mv -f "$tmp/cert.pem" "$cert"

echo "wrote $cert and $key"
openssl x509 -in "$cert" -noout -subject -enddate -ext subjectAltName 2>/dev/null | sed 's/^/  /' || true
