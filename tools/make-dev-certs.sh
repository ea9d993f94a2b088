#!/bin/bash
# Makes a private CA and certificates signed by it for local TLS runs and the tests:
#
#   tools/make-dev-certs.sh DIR [NAME...]
#
# writes into DIR (created if missing; existing files are replaced):
#   ca.crt ca.key           the CA (trusted by every process: --tls-ca)
#   server.crt server.key   a server certificate for the coordinator and the workers
#                           (subjectAltName: localhost, 127.0.0.1, ::1 and each NAME given,
#                           e.g. the Kubernetes service names)
#   client.crt client.key   the coordinator's client certificate, presented to the workers
#                           when they require mutual TLS
# Keys are EC P-256, certificates valid for 30 days. For development and tests only: the CA
# key lies next to the certificates. Uses Debian's openssl (tools/setup.sh).
set -euo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && exit 0 || exit 2
fi
command -v openssl >/dev/null || { echo "make-dev-certs: openssl not found (tools/setup.sh)" >&2; exit 1; }
dir=$1
shift
mkdir -p "$dir"
cd "$dir"
umask 077

san="DNS:localhost,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1"
for name in "$@"; do
  case "$name" in
    *[!A-Za-z0-9.*-]*) echo "make-dev-certs: '$name' is not a DNS name" >&2; exit 2 ;;
  esac
  san="$san,DNS:$name"
done

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# sign NAME SUBJECT EXTENSIONS: NAME.key, NAME.crt signed by the CA.
sign() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
  printf '%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
    -sha256 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

key ca.key
openssl req -x509 -new -key ca.key -sha256 -days 30 -subj "/CN=Tandem dev CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out ca.crt 2>/dev/null
sign server "/CN=tandem-server" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$san"
sign client "/CN=tandem-coordinator" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
rm -f ca.srl
chmod 644 ca.crt server.crt client.crt
echo "make-dev-certs: CA, server and client certificates in $PWD" >&2
