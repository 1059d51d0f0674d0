//! TLS to the database with `rustls` (the `ring` provider), chosen by the
//! connection string as libpq spells it: `sslmode=require|verify-ca|verify-full`
//! and `sslrootcert=FILE` (PEM CA certificates; default: the system's roots).
//!
//! mnemo never accepts a certificate it cannot verify: `require` and
//! `verify-ca` check the chain against the roots (as libpq's `require` does
//! when a root certificate is present), `verify-full` checks the host name
//! too. `disable`, `allow` and `prefer` (and no `sslmode`) connect without
//! TLS; nothing is negotiated down silently from a mode that asks for TLS.
//!
//! [`split_tls_options`] is pure: it takes the TLS options out of the
//! string (the driver does not know `sslrootcert` nor the `verify-*` modes)
//! and hands the rest to the driver with `sslmode=require`.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How the server's certificate is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verify {
    /// The chain up to a trusted root (`require`, `verify-ca`).
    Chain,
    /// The chain and the host name (`verify-full`).
    Full,
}

/// The TLS options of a connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// How the certificate is checked.
    pub verify: Verify,
    /// PEM file of trusted CAs; `None`: the system's roots.
    pub root_cert: Option<PathBuf>,
}

/// A bad TLS option or file.
#[derive(Debug, thiserror::Error)]
pub enum TlsOptionError {
    /// An `sslmode` mnemo does not know.
    #[error(
        "postgres: sslmode={0} is not one of disable, allow, prefer, require, verify-ca, verify-full"
    )]
    Mode(String),
    /// The CA file could not be read or held no certificate.
    #[error("postgres: sslrootcert {path}: {message}")]
    RootCert {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// No CA to verify against.
    #[error(
        "postgres: sslmode asks for TLS but no CA certificate was found; name one with sslrootcert=FILE"
    )]
    NoRoots,
    /// rustls refused the configuration.
    #[error("postgres: TLS configuration: {0}")]
    Config(String),
}

/// Splits `url` into the string for the driver and its TLS options (`None`:
/// no TLS). Handles URLs (`postgres://…?sslmode=…&sslrootcert=…`) and
/// key=value strings (`host=… sslmode=…`).
pub fn split_tls_options(url: &str) -> Result<(String, Option<TlsOptions>), TlsOptionError> {
    let is_url = crate::is_postgres_url(url);
    let (head, params, sep) = if is_url {
        match url.split_once('?') {
            Some((h, q)) => (
                h.to_string(),
                q.split('&').map(str::to_string).collect(),
                "&",
            ),
            None => (url.to_string(), Vec::new(), "&"),
        }
    } else {
        (
            String::new(),
            url.split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>(),
            " ",
        )
    };
    let mut mode: Option<String> = None;
    let mut root: Option<PathBuf> = None;
    let mut kept: Vec<String> = Vec::new();
    for p in params {
        match p.split_once('=') {
            Some(("sslmode", v)) => mode = Some(v.to_ascii_lowercase()),
            Some(("sslrootcert", v)) => root = Some(PathBuf::from(percent_decode(v))),
            _ if !p.is_empty() => kept.push(p),
            _ => {}
        }
    }
    let verify = match mode.as_deref() {
        None | Some("disable" | "allow" | "prefer") => None,
        Some("require" | "verify-ca") => Some(Verify::Chain),
        Some("verify-full") => Some(Verify::Full),
        Some(other) => return Err(TlsOptionError::Mode(other.to_string())),
    };
    let tls = verify.map(|verify| TlsOptions {
        verify,
        root_cert: root,
    });
    // The driver negotiates TLS (and refuses a server without it) with
    // sslmode=require; without TLS it is told nothing.
    if tls.is_some() {
        kept.push("sslmode=require".into());
    }
    let out = if is_url {
        if kept.is_empty() {
            head
        } else {
            format!("{head}?{}", kept.join(sep))
        }
    } else {
        kept.join(sep)
    };
    Ok((out, tls))
}

/// `%2F` and friends in a URL's query value (a file path).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(h) = s.get(i + 1..i + 3)
            && let Ok(v) = u8::from_str_radix(h, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn roots(path: Option<&Path>) -> Result<rustls::RootCertStore, TlsOptionError> {
    let mut roots = rustls::RootCertStore::empty();
    match path {
        Some(path) => {
            let err = |message: String| TlsOptionError::RootCert {
                path: path.to_path_buf(),
                message,
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| err(e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| err(e.to_string()))?;
            if certs.is_empty() {
                return Err(err("no CERTIFICATE in this PEM file".into()));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| err(format!("CA certificate: {e}")))?;
            }
        }
        None => {
            for c in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(c);
            }
            if roots.is_empty() {
                return Err(TlsOptionError::NoRoots);
            }
        }
    }
    Ok(roots)
}

/// Checks the chain with webpki and forgives only a name mismatch.
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The rustls connector handed to the driver (`tokio-postgres-rustls`,
/// which also gives SCRAM its channel binding), with the client
/// configuration the options ask for.
#[derive(Clone)]
pub struct RustlsConnect(MakeRustlsConnect);

impl std::fmt::Debug for RustlsConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RustlsConnect")
    }
}

impl RustlsConnect {
    /// Builds the client configuration the options ask for (reads the CA file).
    pub fn new(opts: &TlsOptions) -> Result<Self, TlsOptionError> {
        let roots = Arc::new(roots(opts.root_cert.as_deref())?);
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsOptionError::Config(e.to_string()))?;
        let config = match opts.verify {
            Verify::Full => builder.with_root_certificates(roots).with_no_client_auth(),
            Verify::Chain => {
                let webpki =
                    rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider())
                        .build()
                        .map_err(|e| TlsOptionError::Config(e.to_string()))?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(ChainOnly(webpki)))
                    .with_no_client_auth()
            }
        };
        Ok(RustlsConnect(MakeRustlsConnect::new(config)))
    }

    /// The driver's `MakeTlsConnect` for one connection attempt.
    pub fn connector(&self) -> MakeRustlsConnect {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_are_taken_out_of_urls_and_key_value_strings() {
        let (u, t) = split_tls_options(
            "postgres://u:p@db:5432/x?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            u,
            "postgres://u:p@db:5432/x?connect_timeout=3&sslmode=require"
        );
        assert_eq!(
            t,
            Some(TlsOptions {
                verify: Verify::Full,
                root_cert: Some(PathBuf::from("/etc/ca.pem"))
            })
        );
        let (u, t) =
            split_tls_options("postgres://db/x?sslmode=require").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u, "postgres://db/x?sslmode=require");
        assert_eq!(t.map(|t| t.verify), Some(Verify::Chain));
        let (u, t) =
            split_tls_options("postgres://db/x?sslmode=prefer").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((u.as_str(), t), ("postgres://db/x", None));
        let (u, t) = split_tls_options("postgres://db/x").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((u.as_str(), t), ("postgres://db/x", None));
        let (u, t) = split_tls_options("host=db user=u sslmode=verify-ca sslrootcert=/ca.pem")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(u, "host=db user=u sslmode=require");
        assert_eq!(
            t,
            Some(TlsOptions {
                verify: Verify::Chain,
                root_cert: Some(PathBuf::from("/ca.pem"))
            })
        );
        let e = split_tls_options("postgres://db/x?sslmode=sometimes")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("sslmode=sometimes"), "{e}");
    }

    #[test]
    fn a_missing_ca_file_is_named() {
        let opts = TlsOptions {
            verify: Verify::Full,
            root_cert: Some(PathBuf::from("/nonexistent/mnemo-ca.pem")),
        };
        let e = RustlsConnect::new(&opts)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("sslrootcert /nonexistent/mnemo-ca.pem"), "{e}");
    }
}
