//! Upstream's `ValidateEncryptionConfiguration`: every problem of the file, as field errors
//! with upstream's texts.

use base64::Engine;

use super::types::{EncryptionConfiguration, Key, ProviderConfiguration};
use crate::storage::value::GroupResource;
use crate::storage::value::aes::KEY_SIZES as AES_KEY_SIZES;
use crate::storage::value::secretbox::KEY_SIZE as SECRETBOX_KEY_SIZE;

const MORE_THAN_ONE: &str = "more than one provider specified in a single element, should split into different list elements";
const NO_PROVIDER: &str = "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity";
const BASE64_ERR: &str = "secrets must be base64 encoded";
const EVENTS_GROUP: &str = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file";
const EXTENSIONS_GROUP: &str =
    "'extensions' group has been removed and cannot be used for encryption";
const STAR_RESOURCE: &str =
    "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources";
const OVERLAP: &str = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked";
const NON_REST: &str = "resources which do not have REST API/s cannot be encrypted";
const RESOURCE_NAME: &str = "resource name should not contain capital letters";
const ACROSS_GROUPS: &str = "encrypting the same resource across groups is not supported";
const DUPLICATE: &str = "the same resource cannot be specified multiple times";

/// A Go quoted string (`%q`) for the texts here (ASCII names and paths).
fn quote(s: &str) -> String {
    format!("{s:?}")
}

fn required(path: &str, detail: &str) -> String {
    format!("{path}: Required value: {detail}")
}

fn invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {value}: {detail}")
}

/// Go's `%#v` of a `[]string`.
fn go_strings(values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// A provider as the error shows it: JSON with the secrets redacted (upstream prints Go's
/// `%#v`, pointer addresses included).
fn provider_value(p: &ProviderConfiguration) -> String {
    serde_json::to_string(p).unwrap_or_else(|_| "{}".to_string())
}

/// Every problem of `c`, in upstream's order and words (empty when valid).
pub fn validate(c: &EncryptionConfiguration) -> Vec<String> {
    let mut errs = Vec::new();
    if c.resources.is_empty() {
        errs.push(required("resources", "at least one resources is required"));
        return errs;
    }
    for (i, conf) in c.resources.iter().enumerate() {
        let r = format!("resources[{i}].resources");
        let p = format!("resources[{i}].providers");
        if conf.resources.is_empty() {
            errs.push(required(&r, &format!("at least one {r} is required")));
        }
        validate_overlap(&conf.resources, &r, &mut errs);
        validate_names(&conf.resources, &r, &mut errs);
        if conf.providers.is_empty() {
            errs.push(required(&p, &format!("at least one {p} is required")));
        }
        for (j, provider) in conf.providers.iter().enumerate() {
            let path = format!("{p}[{j}]");
            validate_single_provider(provider, &path, &mut errs);
            if provider.kms.is_some() {
                // Refused when the transformers are built.
            } else if let Some(aes) = &provider.aesgcm {
                validate_keys(
                    &aes.keys,
                    &format!("{path}.aesgcm.keys"),
                    &AES_KEY_SIZES,
                    &mut errs,
                );
            } else if let Some(aes) = &provider.aescbc {
                validate_keys(
                    &aes.keys,
                    &format!("{path}.aescbc.keys"),
                    &AES_KEY_SIZES,
                    &mut errs,
                );
            } else if let Some(sb) = &provider.secretbox {
                validate_keys(
                    &sb.keys,
                    &format!("{path}.secretbox.keys"),
                    &[SECRETBOX_KEY_SIZE],
                    &mut errs,
                );
            }
        }
    }
    errs
}

fn validate_overlap(resources: &[String], path: &str, errs: &mut Vec<String>) {
    if resources.len() < 2 {
        return;
    }
    let parsed: Vec<GroupResource> = resources.iter().map(|r| GroupResource::parse(r)).collect();
    let any = GroupResource::any();
    let (mut overlap, mut duplicate) = (false, false);
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate() {
            if i == j {
                continue;
            }
            if a == b && !duplicate {
                duplicate = true;
                continue;
            }
            if overlap {
                continue;
            }
            if *a == any {
                overlap = true;
                continue;
            }
            if a.group != b.group {
                continue;
            }
            if a.resource == "*" || b.resource == "*" {
                overlap = true;
            }
        }
    }
    if duplicate {
        errs.push(invalid(path, &go_strings(resources), DUPLICATE));
    }
    if overlap {
        errs.push(invalid(path, &go_strings(resources), OVERLAP));
    }
}

fn validate_names(resources: &[String], path: &str, errs: &mut Vec<String>) {
    for (j, res) in resources.iter().enumerate() {
        let at = format!("{path}[{j}]");
        let gr = GroupResource::parse(res);
        let detail = if res.chars().any(|c| c.is_uppercase()) {
            RESOURCE_NAME
        } else if res == "*" {
            STAR_RESOURCE
        } else if matches!(
            res.as_str(),
            "apiserveripinfo" | "serviceipallocations" | "servicenodeportallocations"
        ) {
            NON_REST
        } else if gr.group == "events.k8s.io" {
            EVENTS_GROUP
        } else if gr.group == "extensions" {
            EXTENSIONS_GROUP
        } else if gr.group == "*" && gr.resource != "*" {
            ACROSS_GROUPS
        } else {
            continue;
        };
        errs.push(invalid(&at, &quote(res), detail));
    }
}

fn validate_single_provider(p: &ProviderConfiguration, path: &str, errs: &mut Vec<String>) {
    let found = [
        p.kms.is_some(),
        p.aesgcm.is_some(),
        p.aescbc.is_some(),
        p.secretbox.is_some(),
        p.identity.is_some(),
    ]
    .iter()
    .filter(|f| **f)
    .count();
    if found == 0 {
        errs.push(invalid(path, &provider_value(p), NO_PROVIDER));
    } else if found > 1 {
        errs.push(invalid(path, &provider_value(p), MORE_THAN_ONE));
    }
}

/// Go's `%v` of a `[]int`.
fn go_ints(values: &[usize]) -> String {
    let items: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    format!("[{}]", items.join(" "))
}

fn validate_keys(keys: &[Key], path: &str, sizes: &[usize], errs: &mut Vec<String>) {
    if keys.is_empty() {
        errs.push(required(path, "at least one keys is required"));
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if key.name.is_empty() {
            errs.push(required(
                &format!("{at}.name"),
                "name is a mandatory field for a key",
            ));
        }
        if key.secret.is_empty() {
            errs.push(required(
                &format!("{at}.secret"),
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        let secret_path = format!("{at}.secret");
        match decode_secret(&key.secret) {
            Err(_) => errs.push(invalid(&secret_path, "\"REDACTED\"", BASE64_ERR)),
            Ok(secret) if !sizes.contains(&secret.len()) => errs.push(invalid(
                &secret_path,
                "\"REDACTED\"",
                &format!(
                    "secret is not of the expected length, got {}, expected one of {}",
                    secret.len(),
                    go_ints(sizes)
                ),
            )),
            Ok(_) => {}
        }
    }
}

/// Decodes a key as Go's `base64.StdEncoding` does (padding required; line breaks ignored).
pub fn decode_secret(secret: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let cleaned: String = secret
        .chars()
        .filter(|c| *c != '\r' && *c != '\n')
        .collect();
    base64::engine::general_purpose::STANDARD.decode(cleaned)
}

/// Upstream's aggregate text: one error as itself, several as `[a, b]` (duplicates once).
pub fn aggregate(errs: &[String]) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for e in errs {
        if !unique.contains(&e.as_str()) {
            unique.push(e);
        }
    }
    match unique.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}
