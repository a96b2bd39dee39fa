//! Audit levels and stages (`audit.k8s.io/v1` `Level` and `Stage`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How much of a request is recorded. Ordered: `None < Metadata < Request < RequestResponse`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Not audited.
    #[default]
    None,
    /// Metadata only (user, verb, resource, status …), no bodies.
    Metadata,
    /// Metadata and the request body.
    Request,
    /// Metadata, request and response bodies.
    RequestResponse,
}

impl Level {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    /// Whether this level records at least as much as `other`.
    pub fn at_least(self, other: Level) -> bool {
        self >= other
    }
}

impl FromStr for Level {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        // Case-sensitive, as the Go enum values are.
        match s {
            "None" => Ok(Level::None),
            "Metadata" => Ok(Level::Metadata),
            "Request" => Ok(Level::Request),
            "RequestResponse" => Ok(Level::RequestResponse),
            other => Err(format!(
                "unsupported audit level {other:?}: supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\""
            )),
        }
    }
}

/// The point of request handling at which an event is generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// As soon as the audit filter receives the request.
    RequestReceived,
    /// When the response headers are sent (long-running requests only).
    ResponseStarted,
    /// When the response body has been sent.
    ResponseComplete,
    /// When the handler panicked.
    Panic,
}

impl Stage {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

impl FromStr for Stage {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "RequestReceived" => Ok(Stage::RequestReceived),
            "ResponseStarted" => Ok(Stage::ResponseStarted),
            "ResponseComplete" => Ok(Stage::ResponseComplete),
            "Panic" => Ok(Stage::Panic),
            other => Err(format!(
                "unsupported audit stage {other:?}: supported values: \"RequestReceived\", \"ResponseStarted\", \"ResponseComplete\", \"Panic\""
            )),
        }
    }
}

macro_rules! string_serde {
    ($ty:ty) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let s = String::deserialize(deserializer)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

string_serde!(Level);
string_serde!(Stage);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_round_trip() {
        assert!(Level::RequestResponse.at_least(Level::Request));
        assert!(!Level::Metadata.at_least(Level::Request));
        for l in [
            Level::None,
            Level::Metadata,
            Level::Request,
            Level::RequestResponse,
        ] {
            assert_eq!(l.as_str().parse::<Level>().unwrap(), l);
        }
        assert!("metadata".parse::<Level>().is_err());
        assert!("Bogus".parse::<Stage>().is_err());
    }
}
