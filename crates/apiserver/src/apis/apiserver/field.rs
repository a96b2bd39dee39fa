//! Field errors as upstream's `field.ErrorList` prints them
//! (`jwt[0].issuer.url: Invalid value: "http://x": URL scheme must be https`), aggregated
//! as `[a, b]`.

/// One validation error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError(pub String);

impl FieldError {
    /// `<path>: Required value[: detail]`.
    pub fn required(path: &str, detail: &str) -> Self {
        if detail.is_empty() {
            FieldError(format!("{path}: Required value"))
        } else {
            FieldError(format!("{path}: Required value: {detail}"))
        }
    }

    /// `<path>: Invalid value: "<value>": detail`.
    pub fn invalid(path: &str, value: &str, detail: &str) -> Self {
        FieldError(format!(
            "{path}: Invalid value: {}: {detail}",
            serde_json::Value::String(value.to_string())
        ))
    }

    /// `<path>: Duplicate value: "<value>"`.
    pub fn duplicate(path: &str, value: &str) -> Self {
        FieldError(format!(
            "{path}: Duplicate value: {}",
            serde_json::Value::String(value.to_string())
        ))
    }

    /// `<path>: Unsupported value: "<value>": supported values: "a", "b"`.
    pub fn not_supported(path: &str, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported
            .iter()
            .map(|s| serde_json::Value::String(s.to_string()).to_string())
            .collect();
        FieldError(format!(
            "{path}: Unsupported value: {}: supported values: {}",
            serde_json::Value::String(value.to_string()),
            list.join(", ")
        ))
    }

    /// `<path>: Forbidden: detail`.
    pub fn forbidden(path: &str, detail: &str) -> Self {
        FieldError(format!("{path}: Forbidden: {detail}"))
    }
}

/// Several validation errors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldErrors(pub Vec<FieldError>);

impl FieldErrors {
    /// Adds one.
    pub fn push(&mut self, e: FieldError) {
        self.0.push(e);
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for FieldErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_slice() {
            [one] => f.write_str(&one.0),
            many => {
                let texts: Vec<&str> = many.iter().map(|e| e.0.as_str()).collect();
                write!(f, "[{}]", texts.join(", "))
            }
        }
    }
}
