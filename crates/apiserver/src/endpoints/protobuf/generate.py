#!/usr/bin/env python3
"""Writes `generated.rs`: the protobuf field tables of every built-in kind kube-apiserver serves.

Usage (from this directory):

    for r in api:1.35.7 apimachinery:1.35.7 apiextensions-apiserver:1.35.7 \
             kube-aggregator:1.35.6; do
        git clone -q --depth 1 --branch kubernetes-${r#*:} \
            https://github.com/kubernetes/${r%:*} /tmp/k8s-src/${r%:*}
    done
    python3 generate.py /tmp/k8s-src > generated.rs && cargo fmt --all

(kube-aggregator has no 1.35.7 tag; its apiregistration/v1 types are the same in every 1.35.)
Then run `cargo test -p apiserver --lib protobuf`: `every_kind_fully_populated_matches_prost`
checks every table against k8s-pb's prost messages.

The input is the Go API types of those modules. Only facts are read from them: each field's
protobuf number (`protobuf:"...,N,..."` tag), its JSON name and `omitempty`/`inline` (`json` tag),
and its Go type (pointer or value, slice, map, struct, scalar). Each message's fields are
written in field-number order, the order gogo's generated `Marshal` writes them in. The wire type follows from the Go
type, not the tag (the apiextensions tags say `bytes` for bools and doubles).
"""

import os
import re
import sys

# Go package directories, keyed by the short name used in the Rust statics.
PACKAGES = {
    "meta_v1": "apimachinery/pkg/apis/meta/v1",
    "core_v1": "api/core/v1",
    "apps_v1": "api/apps/v1",
    "authorization_v1": "api/authorization/v1",
    "batch_v1": "api/batch/v1",
    "autoscaling_v1": "api/autoscaling/v1",
    "autoscaling_v2": "api/autoscaling/v2",
    "certificates_v1": "api/certificates/v1",
    "authentication_v1": "api/authentication/v1",
    "node_v1": "api/node/v1",
    "resource_v1": "api/resource/v1",
    "networking_v1": "api/networking/v1",
    "policy_v1": "api/policy/v1",
    "rbac_v1": "api/rbac/v1",
    "storage_v1": "api/storage/v1",
    "scheduling_v1": "api/scheduling/v1",
    "coordination_v1": "api/coordination/v1",
    "discovery_v1": "api/discovery/v1",
    "events_v1": "api/events/v1",
    "apiextensions_v1": "apiextensions-apiserver/pkg/apis/apiextensions/v1",
    "apiregistration_v1": "kube-aggregator/pkg/apis/apiregistration/v1",
    "admissionregistration_v1": "api/admissionregistration/v1",
}

# Go import paths of the packages above (and of the special value types below).
IMPORTS = {
    "k8s.io/apimachinery/pkg/apis/meta/v1": "meta_v1",
    "k8s.io/api/core/v1": "core_v1",
    "k8s.io/api/apps/v1": "apps_v1",
    "k8s.io/api/authorization/v1": "authorization_v1",
    "k8s.io/api/batch/v1": "batch_v1",
    "k8s.io/api/autoscaling/v1": "autoscaling_v1",
    "k8s.io/api/autoscaling/v2": "autoscaling_v2",
    "k8s.io/api/certificates/v1": "certificates_v1",
    "k8s.io/api/authentication/v1": "authentication_v1",
    "k8s.io/api/node/v1": "node_v1",
    "k8s.io/api/resource/v1": "resource_v1",
    "k8s.io/api/networking/v1": "networking_v1",
    "k8s.io/api/policy/v1": "policy_v1",
    "k8s.io/api/rbac/v1": "rbac_v1",
    "k8s.io/api/storage/v1": "storage_v1",
    "k8s.io/api/scheduling/v1": "scheduling_v1",
    "k8s.io/api/coordination/v1": "coordination_v1",
    "k8s.io/api/discovery/v1": "discovery_v1",
    "k8s.io/api/events/v1": "events_v1",
    "k8s.io/api/admissionregistration/v1": "admissionregistration_v1",
    "k8s.io/apimachinery/pkg/api/resource": "resource",
    "k8s.io/apimachinery/pkg/util/intstr": "intstr",
    "k8s.io/apimachinery/pkg/runtime": "runtime",
    "k8s.io/apimachinery/pkg/types": "types",
}

# Types with their own protobuf and JSON forms (decoded by code in schema.rs, not by a table).
SPECIAL = {
    ("meta_v1", "Time"): "Time",
    ("meta_v1", "MicroTime"): "MicroTime",
    ("meta_v1", "FieldsV1"): "RawJson",
    ("resource", "Quantity"): "Quantity",
    ("intstr", "IntOrString"): "IntOrString",
    ("runtime", "RawExtension"): "RawJson",
    ("types", "UID"): "Str",
    ("types", "NodeName"): "Str",
    ("apiextensions_v1", "JSON"): "RawJson",
    ("certificates_v1", "ExtraValue"): "StringList",
    ("authentication_v1", "ExtraValue"): "StringList",
    ("authorization_v1", "ExtraValue"): "StringList",
    ("apiextensions_v1", "JSONSchemaPropsOrArray"): "SchemaOrArray",
    ("apiextensions_v1", "JSONSchemaPropsOrBool"): "SchemaOrBool",
    ("apiextensions_v1", "JSONSchemaPropsOrStringArray"): "SchemaOrStringArray",
}

SCALARS = {
    "string": "Str",
    "bool": "Bool",
    "int32": "Int",
    "int64": "Int",
    "int": "Int",
    "uint32": "Int",
    "uint64": "Int",
    "float64": "Double",
    "[]byte": "Bytes",
}

# The kinds whose bodies are decoded: (apiVersion, kind, package, message).
ROOTS = [
    ("v1", "ConfigMap", "core_v1", "ConfigMap"),
    ("v1", "Secret", "core_v1", "Secret"),
    ("v1", "Namespace", "core_v1", "Namespace"),
    ("v1", "ServiceAccount", "core_v1", "ServiceAccount"),
    ("v1", "Service", "core_v1", "Service"),
    ("v1", "Endpoints", "core_v1", "Endpoints"),
    ("v1", "Event", "core_v1", "Event"),
    ("v1", "Pod", "core_v1", "Pod"),
    ("v1", "Binding", "core_v1", "Binding"),
    ("v1", "Node", "core_v1", "Node"),
    ("v1", "PersistentVolumeClaim", "core_v1", "PersistentVolumeClaim"),
    ("v1", "PersistentVolume", "core_v1", "PersistentVolume"),
    ("v1", "LimitRange", "core_v1", "LimitRange"),
    ("v1", "ResourceQuota", "core_v1", "ResourceQuota"),
    ("v1", "ReplicationController", "core_v1", "ReplicationController"),
    ("v1", "PodTemplate", "core_v1", "PodTemplate"),
    ("apps/v1", "ControllerRevision", "apps_v1", "ControllerRevision"),
    ("apps/v1", "DaemonSet", "apps_v1", "DaemonSet"),
    ("apps/v1", "Deployment", "apps_v1", "Deployment"),
    ("apps/v1", "ReplicaSet", "apps_v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet", "apps_v1", "StatefulSet"),
    ("autoscaling/v1", "Scale", "autoscaling_v1", "Scale"),
    (
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        "autoscaling_v1",
        "HorizontalPodAutoscaler",
    ),
    (
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "autoscaling_v2",
        "HorizontalPodAutoscaler",
    ),
    (
        "certificates.k8s.io/v1",
        "CertificateSigningRequest",
        "certificates_v1",
        "CertificateSigningRequest",
    ),
    ("node.k8s.io/v1", "RuntimeClass", "node_v1", "RuntimeClass"),
    ("resource.k8s.io/v1", "DeviceClass", "resource_v1", "DeviceClass"),
    ("resource.k8s.io/v1", "ResourceClaim", "resource_v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate", "resource_v1", "ResourceClaimTemplate"),
    ("resource.k8s.io/v1", "ResourceSlice", "resource_v1", "ResourceSlice"),
    ("events.k8s.io/v1", "Event", "events_v1", "Event"),
    ("batch/v1", "CronJob", "batch_v1", "CronJob"),
    ("batch/v1", "Job", "batch_v1", "Job"),
    ("networking.k8s.io/v1", "IngressClass", "networking_v1", "IngressClass"),
    ("networking.k8s.io/v1", "Ingress", "networking_v1", "Ingress"),
    ("networking.k8s.io/v1", "NetworkPolicy", "networking_v1", "NetworkPolicy"),
    ("policy/v1", "PodDisruptionBudget", "policy_v1", "PodDisruptionBudget"),
    ("policy/v1", "Eviction", "policy_v1", "Eviction"),
    (
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        "authorization_v1",
        "SubjectAccessReview",
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        "authorization_v1",
        "SelfSubjectAccessReview",
    ),
    (
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        "authorization_v1",
        "LocalSubjectAccessReview",
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        "authorization_v1",
        "SelfSubjectRulesReview",
    ),
    ("rbac.authorization.k8s.io/v1", "Role", "rbac_v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "rbac_v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "rbac_v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "rbac_v1", "ClusterRoleBinding"),
    ("authentication.k8s.io/v1", "TokenRequest", "authentication_v1", "TokenRequest"),
    ("authentication.k8s.io/v1", "TokenReview", "authentication_v1", "TokenReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview", "authentication_v1", "SelfSubjectReview"),
    ("storage.k8s.io/v1", "StorageClass", "storage_v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSIDriver", "storage_v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSINode", "storage_v1", "CSINode"),
    ("storage.k8s.io/v1", "CSIStorageCapacity", "storage_v1", "CSIStorageCapacity"),
    ("storage.k8s.io/v1", "VolumeAttachment", "storage_v1", "VolumeAttachment"),
    ("storage.k8s.io/v1", "VolumeAttributesClass", "storage_v1", "VolumeAttributesClass"),
    ("networking.k8s.io/v1", "IPAddress", "networking_v1", "IPAddress"),
    ("networking.k8s.io/v1", "ServiceCIDR", "networking_v1", "ServiceCIDR"),
    (
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "apiextensions_v1",
        "CustomResourceDefinition",
    ),
    ("scheduling.k8s.io/v1", "PriorityClass", "scheduling_v1", "PriorityClass"),
    ("coordination.k8s.io/v1", "Lease", "coordination_v1", "Lease"),
    ("discovery.k8s.io/v1", "EndpointSlice", "discovery_v1", "EndpointSlice"),
    ("apiregistration.k8s.io/v1", "APIService", "apiregistration_v1", "APIService"),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "admissionregistration_v1",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "admissionregistration_v1",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        "admissionregistration_v1",
        "ValidatingAdmissionPolicy",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        "admissionregistration_v1",
        "ValidatingAdmissionPolicyBinding",
    ),
]

FIELD_RE = re.compile(r"^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`")
TAG_RE = re.compile(r'(\w+):"([^"]*)"')


class Package:
    def __init__(self, key):
        self.key = key
        self.structs = {}  # name -> ([(go name, go type, tags)], import aliases of its file)
        self.typedefs = {}  # name -> (go type, import aliases of its file)


def parse_package(root, key):
    pkg = Package(key)
    directory = os.path.join(root, PACKAGES[key])
    for name in sorted(os.listdir(directory)):
        if not name.startswith("types") or not name.endswith(".go") or name.endswith("_test.go"):
            continue
        if "swagger" in name:
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            parse_file(pkg, f.read())
    return pkg


def parse_file(pkg, text):
    aliases = {}
    for alias, path in re.findall(r'^(?:import)?\s*(\w+\s+)?"([^"]+)"\s*$', text, re.M):
        if path in IMPORTS:
            aliases[(alias.strip() or path.rsplit("/", 1)[1])] = IMPORTS[path]
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^type (\w+) struct\s*\{\}", line)
        if m:
            pkg.structs[m.group(1)] = ([], aliases)
            i += 1
            continue
        m = re.match(r"^type (\w+) struct \{\s*$", line)
        if m:
            fields = []
            i += 1
            while not lines[i].startswith("}"):
                stripped = lines[i].strip()
                if stripped and not stripped.startswith("//"):
                    fm = FIELD_RE.match(lines[i])
                    if fm:
                        fields.append((fm.group(1), fm.group(2), dict(TAG_RE.findall(fm.group(3)))))
                i += 1
            pkg.structs[m.group(1)] = (fields, aliases)
        else:
            m = re.match(r"^type (\w+) =? ?(\S+)\s*(//.*)?$", line)
            if m and m.group(2) != "struct":
                pkg.typedefs[m.group(1)] = (m.group(2), aliases)
        i += 1


def snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.upper()


class Generator:
    def __init__(self, root):
        self.packages = {key: parse_package(root, key) for key in PACKAGES}
        self.emitted = {}  # (pkg, name) -> rust static name
        self.queue = []
        self.out = []
        self.map_values = {}  # rust Ty expression -> static name

    def static_name(self, pkg, name):
        key = (pkg, name)
        if key not in self.emitted:
            self.emitted[key] = f"{pkg.upper()}_{snake(name)}"
            self.queue.append(key)
        return self.emitted[key]

    def resolve(self, pkg, aliases, go):
        """(kind, rust Ty expression) for a Go type: kind is scalar|message|special|rep|map."""
        if go in SCALARS:
            return ("scalar", SCALARS[go])
        if go.startswith("[]"):
            kind, ty = self.resolve(pkg, aliases, go[2:])
            assert kind not in ("rep", "map"), go
            return ("rep", ty)
        if go.startswith("map["):
            key, value = re.match(r"map\[([^\]]+)\](.+)", go).groups()
            assert self.resolve(pkg, aliases, key) == ("scalar", "Str"), go
            kind, ty = self.resolve(pkg, aliases, value)
            assert kind not in ("rep", "map"), go
            return ("map", ty)
        if "." in go:
            alias, name = go.split(".", 1)
            target = aliases.get(alias)
            if target is None:
                raise SystemExit(f"unknown package {alias} in {go} ({pkg})")
        else:
            target, name = pkg, go
        if (target, name) in SPECIAL:
            special = SPECIAL[(target, name)]
            if special == "Str":
                return ("scalar", special)
            if special.startswith("Schema"):
                # The JSONSchemaProps unions carry the schema message they wrap.
                return ("special", f"{special}(&{self.static_name(target, 'JSONSchemaProps')})")
            return ("special", special)
        package = self.packages.get(target)
        if package is None:
            raise SystemExit(f"no Go sources for {target}.{name}")
        if name in package.structs:
            return ("message", f"Ty::Message(&{self.static_name(target, name)})")
        if name in package.typedefs:
            under, under_aliases = package.typedefs[name]
            return self.resolve(target, under_aliases, under)
        raise SystemExit(f"unknown type {target}.{name}")

    def message(self, pkg, name):
        fields, aliases = self.packages[pkg].structs[name]
        rows = []
        for go_name, go_type, tags in fields:
            proto = tags.get("protobuf")
            if proto is None or proto == "-":
                continue  # TypeMeta and other fields that are not on the wire
            number = int(proto.split(",")[1])
            json_tag = tags.get("json", go_name or "")
            json_name, *options = json_tag.split(",")
            pointer = go_type.startswith("*")
            kind, ty = self.resolve(pkg, aliases, go_type.lstrip("*"))
            if "inline" in options or (go_name is None and "json" not in tags):
                assert kind == "message" and not pointer, (pkg, name, go_name)
                rows.append(f"inline({number}, &{ty[len('Ty::Message(&'):-1]})")
                continue
            if json_name == "":
                json_name = go_name
            if json_name == "-":
                raise SystemExit(f"{pkg}.{name}.{go_name}: on the wire but not in JSON")
            if kind == "rep":
                rows.append(f'rep({number}, "{json_name}", {ty})')
            elif kind == "map":
                rows.append(f'map({number}, "{json_name}", &{self.map_value(ty)})')
            elif (kind == "scalar" or ty == "IntOrString") and not pointer and "omitempty" in options:
                # A Go value with omitempty: the zero value is what a JSON client leaves out
                # (for IntOrString too: upstream's defaulting treats its zero as unset).
                rows.append(f'val({number}, "{json_name}", {ty})')
            elif kind == "message" and not pointer:
                rows.append(f'val({number}, "{json_name}", {ty})')
            elif pointer:
                # Pointers: on the wire only when set; the decoded value is kept even when zero.
                rows.append(f'ptr({number}, "{json_name}", {ty})')
            else:
                # Values without omitempty, and structs (which omitempty never omits in Go's
                # JSON encoder): always on the wire, the decoded value kept even when zero.
                rows.append(f'keep({number}, "{json_name}", {ty})')
        static = self.emitted[(pkg, name)]
        # Field-number order: the order gogo's generated Marshal writes them in.
        rows.sort(key=lambda row: int(re.search(r"\((\d+),", row).group(1)))
        body = "".join(f"        {row},\n" for row in rows)
        self.out.append(
            f"static {static}: Message = Message {{\n"
            f'    name: "{name}",\n'
            f"    fields: &[\n{body}    ],\n}};\n"
        )

    def go_name(self, static):
        return next(name for (_, name), s in self.emitted.items() if s == static)

    def map_value(self, ty):
        if not ty.startswith("Ty::Message("):
            return ty
        if ty not in self.map_values:
            inner = ty[len("Ty::Message(&") : -1]
            self.map_values[ty] = f"{inner}_VALUE"
        return self.map_values[ty]

    def run(self):
        roots = [(v, k, self.static_name(p, n)) for v, k, p, n in ROOTS]
        delete_options = self.static_name("meta_v1", "DeleteOptions")
        # The messages responses need beyond the kinds: Status, lists and PartialObjectMetadata.
        extra = {
            name: self.static_name("meta_v1", message)
            for name, message in (
                ("STATUS", "Status"),
                ("LIST_META", "ListMeta"),
                ("OBJECT_META", "ObjectMeta"),
            )
        }
        while self.queue:
            pkg, name = self.queue.pop(0)
            self.message(pkg, name)
        body = "\n".join(self.out)
        used = sorted(
            name
            for name in set(SCALARS.values()) | set(SPECIAL.values())
            if re.search(rf"[(&, ]{name}[),(]", body)
        )
        names = ", ".join("String as Str" if n == "Str" else n for n in used)
        print(HEADER)
        print(f"use Ty::{{{names}}};\n")
        for ty, static in sorted(self.map_values.items(), key=lambda kv: kv[1]):
            print(f"static {static}: Ty = {ty};\n")
        print(body)
        print("/// `metav1.DeleteOptions` (sent with the apiVersion of whichever client sends it).")
        print(f"pub(super) static DELETE_OPTIONS: &Message = &{delete_options};\n")
        for name, static in extra.items():
            print(f"/// `metav1.{self.go_name(static)}` (responses).")
            print(f"pub(super) static {name}: &Message = &{static};\n")
        print("/// The kinds whose bodies are decoded: `(apiVersion, kind, message)`.")
        print("pub(super) static KINDS: &[(&str, &str, &Message)] = &[")
        for version, kind, static in roots:
            print(f'    ("{version}", "{kind}", &{static}),')
        print("];")


HEADER = """\
//! Field tables of every built-in kind kube-apiserver serves and of all their nested messages.
//!
//! GENERATED by `generate.py` from the Go API types of Kubernetes 1.35 (field numbers, JSON names,
//! pointer/value and `omitempty`); do not edit by hand. To regenerate, see that script's header.

use super::schema::{Message, Ty, inline, keep, map, ptr, rep, val};
"""


if __name__ == "__main__":
    Generator(sys.argv[1]).run()
