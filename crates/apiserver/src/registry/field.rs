//! Field errors (upstream `k8s.io/apimachinery/pkg/util/validation/field`), rendered the way
//! upstream renders them in `Invalid` statuses.

use serde_json::Value;

use crate::status::StatusCause;

/// The kind of a field error, with upstream's cause reason and message text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorType {
    /// `FieldValueNotFound`, `Not found`.
    NotFound,
    /// `FieldValueRequired`, `Required value`.
    Required,
    /// `FieldValueDuplicate`, `Duplicate value`.
    Duplicate,
    /// `FieldValueInvalid`, `Invalid value`.
    Invalid,
    /// `FieldValueNotSupported`, `Unsupported value`.
    NotSupported,
    /// `FieldValueForbidden`, `Forbidden`.
    Forbidden,
    /// `FieldValueTooLong`, `Too long`.
    TooLong,
    /// `FieldValueTooMany`, `Too many`.
    TooMany,
    /// `InternalError`, `Internal error`.
    Internal,
    /// `FieldValueTypeInvalid`, `Invalid value`.
    TypeInvalid,
}

impl FieldErrorType {
    /// The `StatusCause.reason`.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "FieldValueNotFound",
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::NotSupported => "FieldValueNotSupported",
            FieldErrorType::Forbidden => "FieldValueForbidden",
            FieldErrorType::TooLong => "FieldValueTooLong",
            FieldErrorType::TooMany => "FieldValueTooMany",
            FieldErrorType::Internal => "InternalError",
            FieldErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The message prefix.
    pub fn text(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "Not found",
            FieldErrorType::Required => "Required value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::Invalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::TooMany => "Too many",
            FieldErrorType::Internal => "Internal error",
            FieldErrorType::TypeInvalid => "Invalid value",
        }
    }
}

/// One validation error at a field path.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// The kind of error.
    pub type_: FieldErrorType,
    /// The field path, e.g. `metadata.name` or `spec.containers[0].image`.
    pub field: String,
    /// The offending value, if any (shown for Invalid, NotSupported, Duplicate, NotFound).
    pub bad_value: Option<Value>,
    /// Further detail.
    pub detail: String,
}

impl FieldError {
    fn new(type_: FieldErrorType, field: &str, bad_value: Option<Value>, detail: &str) -> Self {
        FieldError {
            type_,
            field: field.to_string(),
            bad_value,
            detail: detail.to_string(),
        }
    }

    /// `Required value`.
    pub fn required(field: &str, detail: &str) -> Self {
        Self::new(FieldErrorType::Required, field, None, detail)
    }

    /// `Invalid value: <v>: <detail>`.
    pub fn invalid(field: &str, value: impl Into<Value>, detail: &str) -> Self {
        Self::new(FieldErrorType::Invalid, field, Some(value.into()), detail)
    }

    /// `Forbidden: <detail>`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::new(FieldErrorType::Forbidden, field, None, detail)
    }

    /// `Duplicate value: <v>`.
    pub fn duplicate(field: &str, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorType::Duplicate, field, Some(value.into()), "")
    }

    /// `Not found: <v>`.
    pub fn not_found(field: &str, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorType::NotFound, field, Some(value.into()), "")
    }

    /// `Unsupported value: <v>: supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: impl Into<Value>, valid: &[&str]) -> Self {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| format!("{v:?}")).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorType::NotSupported,
            field,
            Some(value.into()),
            &detail,
        )
    }

    /// `Too long: may not be more than N bytes`.
    pub fn too_long(field: &str, max: usize) -> Self {
        Self::new(
            FieldErrorType::TooLong,
            field,
            None,
            &format!("may not be more than {max} bytes"),
        )
    }

    /// The message without the field path (upstream `ErrorBody`).
    pub fn body(&self) -> String {
        let mut text = self.type_.text().to_string();
        let show_value = matches!(
            self.type_,
            FieldErrorType::Invalid
                | FieldErrorType::TypeInvalid
                | FieldErrorType::NotSupported
                | FieldErrorType::Duplicate
                | FieldErrorType::NotFound
        );
        if show_value && let Some(value) = &self.bad_value {
            text.push_str(": ");
            text.push_str(&render_value(value));
        }
        if !self.detail.is_empty() {
            text.push_str(": ");
            text.push_str(&self.detail);
        }
        text
    }

    /// The `StatusCause` of this error.
    pub fn to_cause(&self) -> StatusCause {
        StatusCause {
            reason: self.type_.reason().to_string(),
            message: self.body(),
            field: self.field.clone(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.body())
        } else {
            write!(f, "{}: {}", self.field, self.body())
        }
    }
}

/// Upstream prints strings quoted (`%q`), numbers and booleans bare, `null` for nil.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_upstream() {
        assert_eq!(
            FieldError::required("metadata.name", "name or generateName is required").to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(
            FieldError::invalid("spec.replicas", -1, "must be greater than or equal to 0")
                .to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            FieldError::not_supported("spec.type", "Foo", &["ClusterIP", "NodePort"]).to_string(),
            "spec.type: Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"NodePort\""
        );
    }
}
