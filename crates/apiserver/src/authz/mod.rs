//! Authorization: authorizers (AlwaysAllow, AlwaysDeny, privileged groups …) and their union.
