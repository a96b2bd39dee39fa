//! Authentication: authenticators (x509, token file, anonymous …) and their union.
