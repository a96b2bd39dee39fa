//! `--feature-gates` as kube-apiserver 1.35 reads it (upstream `component-base/featuregate` and
//! the component registry of `component-base/compatibility`): `[kube:]Name=bool` pairs, comma
//! separated and repeatable; every gate kube-apiserver 1.35 registers (its own, the generic
//! server's, apiextensions', client-go's, logging's, zpages' and the cloud controller
//! manager's), with its stage, default and lock; upstream's errors for unknown, malformed and
//! locked gates and for unmet dependencies; `AllAlpha` and `AllBeta`.
//!
//! Most gates switch behaviour this server does not have (kubelet, scheduler, controllers) or
//! behaviour it always has; [`IMPLEMENTED`] lists the gates it consults. Setting any other
//! gate to a non-default value is accepted with a warning (the server behaves as with the
//! default), since nothing it serves depends on them.

use std::collections::BTreeMap;

/// A gate's maturity at 1.35.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Alpha.
    Alpha,
    /// Beta.
    Beta,
    /// Generally available.
    Ga,
    /// Deprecated.
    Deprecated,
}

/// One registered gate.
#[derive(Clone, Copy, Debug)]
pub struct Gate {
    /// The name `--feature-gates` uses.
    pub name: &'static str,
    /// Its stage at 1.35.
    pub stage: Stage,
    /// Its default at 1.35.
    pub default: bool,
    /// Whether it can only be set to its default.
    pub locked: bool,
}

const fn gate(name: &'static str, stage: Stage, default: bool, locked: bool) -> Gate {
    Gate {
        name,
        stage,
        default,
        locked,
    }
}

use Stage::{Alpha as A, Beta as B, Deprecated as D, Ga as G};

/// Every gate kube-apiserver 1.35 knows, sorted by name.
pub const GATES: &[Gate] = &[
    gate("APIResponseCompression", B, true, false),
    gate("APIServerIdentity", B, true, false),
    gate("APIServerTracing", G, true, true),
    gate("APIServingWithRoutine", A, false, false),
    gate("AggregatedDiscoveryRemoveBetaType", D, true, true),
    gate("AllAlpha", A, false, false),
    gate("AllBeta", B, false, false),
    gate("AllowDNSOnlyNodeCSR", D, false, false),
    gate(
        "AllowInsecureKubeletCertificateSigningRequests",
        D,
        false,
        false,
    ),
    gate(
        "AllowOverwriteTerminationGracePeriodSeconds",
        D,
        false,
        true,
    ),
    gate("AllowParsingUserUIDFromCertAuth", B, true, false),
    gate("AllowUnsafeMalformedObjectDeletion", A, false, false),
    gate("AnonymousAuthConfigurableEndpoints", G, true, true),
    gate("AnyVolumeDataSource", G, true, true),
    gate("AuthorizeNodeWithSelectors", G, true, true),
    gate(
        "AuthorizePodWebsocketUpgradeCreatePermission",
        B,
        true,
        false,
    ),
    gate("AuthorizeWithSelectors", G, true, true),
    gate("BtreeWatchCache", G, true, true),
    gate("CBORServingAndStorage", A, false, false),
    gate("CPUManagerPolicyAlphaOptions", A, false, false),
    gate("CPUManagerPolicyBetaOptions", B, true, false),
    gate("CPUManagerPolicyOptions", G, true, true),
    gate("CRDObservedGenerationTracking", B, false, false),
    gate("CRDValidationRatcheting", G, true, true),
    gate("CSIMigrationPortworx", G, true, true),
    gate("CSIServiceAccountTokenSecrets", B, true, false),
    gate("CSIVolumeHealth", A, false, false),
    gate("ChangeContainerStatusOnKubeletRestart", D, false, false),
    gate("ClearingNominatedNodeNameAfterBinding", B, true, false),
    gate("ClientsAllowCBOR", A, false, false),
    gate("ClientsPreferCBOR", A, false, false),
    gate(
        "CloudControllerManagerWatchBasedRoutesReconciliation",
        A,
        false,
        false,
    ),
    gate("CloudControllerManagerWebhook", A, false, false),
    gate("ClusterTrustBundle", B, false, false),
    gate("ClusterTrustBundleProjection", B, false, false),
    gate("ComponentFlagz", A, false, false),
    gate("ComponentStatusz", A, false, false),
    gate("ConcurrentWatchObjectDecode", B, false, false),
    gate("ConsistentListFromCache", G, true, true),
    gate("ConstrainedImpersonation", A, false, false),
    gate("ContainerCheckpoint", B, true, false),
    gate("ContainerRestartRules", B, true, false),
    gate("ContainerStopSignals", A, false, false),
    gate("ContextualLogging", B, true, false),
    gate("CoordinatedLeaderElection", B, false, false),
    gate("CrossNamespaceVolumeDataSource", A, false, false),
    gate("CustomCPUCFSQuotaPeriod", A, false, false),
    gate("CustomResourceFieldSelectors", G, true, true),
    gate("DRAAdminAccess", B, true, false),
    gate("DRAConsumableCapacity", A, false, false),
    gate("DRADeviceBindingConditions", A, false, false),
    gate("DRADeviceTaintRules", A, false, false),
    gate("DRADeviceTaints", A, false, false),
    gate("DRAExtendedResource", A, false, false),
    gate("DRAPartitionableDevices", A, false, false),
    gate("DRAPrioritizedList", B, true, false),
    gate("DRAResourceClaimDeviceStatus", B, true, false),
    gate("DRASchedulerFilterTimeout", B, true, false),
    gate("DeclarativeValidation", B, true, false),
    gate("DeclarativeValidationTakeover", B, false, false),
    gate("DeploymentReplicaSetTerminatingReplicas", B, true, false),
    gate("DetectCacheInconsistency", B, true, false),
    gate("DisableAllocatorDualWrite", G, true, true),
    gate("DisableCPUQuotaWithExclusiveCPUs", B, true, false),
    gate("DisableNodeKubeProxyVersion", D, true, false),
    gate("DynamicResourceAllocation", G, true, true),
    gate("EnvFiles", B, true, false),
    gate("EventedPLEG", A, false, false),
    gate("ExecProbeTimeout", G, true, true),
    gate("ExternalServiceAccountTokenSigner", B, true, false),
    gate("GangScheduling", A, false, false),
    gate("GenericWorkload", A, false, false),
    gate("GitRepoVolumeDriver", D, false, false),
    gate("GracefulNodeShutdown", B, true, false),
    gate("GracefulNodeShutdownBasedOnPodPriority", B, true, false),
    gate("HPAConfigurableTolerance", B, true, false),
    gate("HPAScaleToZero", A, false, false),
    gate("HonorPVReclaimPolicy", G, true, true),
    gate("HostnameOverride", B, true, false),
    gate("ImageMaximumGCAge", G, true, true),
    gate("ImageVolume", B, true, false),
    gate("ImageVolumeWithDigest", A, false, false),
    gate("InOrderInformers", B, true, false),
    gate("InOrderInformersBatchProcess", B, true, false),
    gate("InPlacePodLevelResourcesVerticalScaling", A, false, false),
    gate("InPlacePodVerticalScaling", G, true, true),
    gate("InPlacePodVerticalScalingAllocatedStatus", D, false, false),
    gate("InPlacePodVerticalScalingExclusiveCPUs", A, false, false),
    gate("InPlacePodVerticalScalingExclusiveMemory", A, false, false),
    gate("InTreePluginPortworxUnregister", A, false, false),
    gate("InformerResourceVersion", G, true, false),
    gate("JobBackoffLimitPerIndex", G, true, true),
    gate("JobManagedBy", G, true, true),
    gate("JobPodReplacementPolicy", G, true, true),
    gate("JobSuccessPolicy", G, true, true),
    gate("KMSv1", D, false, false),
    gate("KubeletCgroupDriverFromCRI", G, true, true),
    gate("KubeletCrashLoopBackOffMax", B, true, false),
    gate("KubeletEnsureSecretPulledImages", B, true, false),
    gate("KubeletFineGrainedAuthz", B, true, false),
    gate("KubeletInUserNamespace", A, false, false),
    gate("KubeletPSI", B, true, false),
    gate("KubeletPodResourcesDynamicResources", B, true, false),
    gate("KubeletPodResourcesGet", B, true, false),
    gate("KubeletPodResourcesListUseActivePods", D, true, false),
    gate("KubeletRegistrationGetOnExistsOnly", D, false, false),
    gate("KubeletSeparateDiskGC", B, true, false),
    gate(
        "KubeletServiceAccountTokenForCredentialProviders",
        B,
        true,
        false,
    ),
    gate("KubeletTracing", G, true, true),
    gate("ListFromCacheSnapshot", B, true, false),
    gate(
        "LocalStorageCapacityIsolationFSQuotaMonitoring",
        B,
        false,
        false,
    ),
    gate("LogarithmicScaleDown", G, true, true),
    gate("LoggingAlphaOptions", A, false, false),
    gate("LoggingBetaOptions", B, true, false),
    gate("MatchLabelKeysInPodAffinity", G, true, true),
    gate("MatchLabelKeysInPodTopologySpread", B, true, false),
    gate(
        "MatchLabelKeysInPodTopologySpreadSelectorMerge",
        B,
        true,
        false,
    ),
    gate("MaxUnavailableStatefulSet", B, true, false),
    gate("MemoryManager", G, true, true),
    gate("MemoryQoS", A, false, false),
    gate("MultiCIDRServiceAllocator", G, true, true),
    gate("MutableCSINodeAllocatableCount", B, true, false),
    gate("MutablePVNodeAffinity", A, false, false),
    gate("MutablePodResourcesForSuspendedJobs", A, false, false),
    gate(
        "MutableSchedulingDirectivesForSuspendedJobs",
        A,
        false,
        false,
    ),
    gate("MutatingAdmissionPolicy", B, false, false),
    gate("NFTablesProxyMode", G, true, true),
    gate("NodeDeclaredFeatures", A, false, false),
    gate("NodeInclusionPolicyInPodTopologySpread", G, true, true),
    gate("NodeLogQuery", B, false, false),
    gate("NodeSwap", G, true, true),
    gate("NominatedNodeNameForExpectation", B, true, false),
    gate("OpenAPIEnums", B, true, false),
    gate("OpportunisticBatching", B, true, false),
    gate("OrderedNamespaceDeletion", G, true, true),
    gate("PodAndContainerStatsFromCRI", A, false, false),
    gate("PodCertificateRequest", B, false, false),
    gate("PodDeletionCost", B, true, false),
    gate("PodLevelResources", B, true, false),
    gate("PodLifecycleSleepAction", G, true, true),
    gate("PodLifecycleSleepActionAllowZero", G, true, true),
    gate("PodLogsQuerySplitStreams", A, false, false),
    gate("PodObservedGenerationTracking", G, true, true),
    gate("PodReadyToStartContainersCondition", B, true, false),
    gate("PodSchedulingReadiness", G, true, true),
    gate("PodTopologyLabelsAdmission", B, true, false),
    gate("PortForwardWebsockets", B, true, false),
    gate("PreferSameTrafficDistribution", G, true, true),
    gate("PreventStaticPodAPIReferences", B, true, false),
    gate("ProcMountType", B, true, false),
    gate("QOSReserved", A, false, false),
    gate("RecoverVolumeExpansionFailure", G, true, true),
    gate("RecursiveReadOnlyMounts", G, true, true),
    gate("ReduceDefaultCrashLoopBackOffDecay", A, false, false),
    gate("RelaxedDNSSearchValidation", G, true, true),
    gate("RelaxedEnvironmentVariableValidation", G, true, true),
    gate("RelaxedServiceNameValidation", A, false, false),
    gate("ReloadKubeletServerCertificateFile", B, true, false),
    gate("RemoteRequestHeaderUID", B, true, false),
    gate("ResilientWatchCacheInitialization", G, true, true),
    gate("ResourceHealthStatus", A, false, false),
    gate("RestartAllContainersOnContainerExits", A, false, false),
    gate("RetryGenerateName", G, true, true),
    gate("RotateKubeletServerCertificate", B, true, false),
    gate("RuntimeClassInImageCriApi", A, false, false),
    gate("SELinuxChangePolicy", B, true, false),
    gate("SELinuxMount", B, false, false),
    gate("SELinuxMountReadWriteOncePod", B, true, false),
    gate("SchedulerAsyncAPICalls", B, true, false),
    gate("SchedulerAsyncPreemption", B, true, false),
    gate("SchedulerPopFromBackoffQ", B, true, false),
    gate("SchedulerQueueingHints", G, true, true),
    gate("SeparateCacheWatchRPC", D, false, false),
    gate("SeparateTaintEvictionController", G, true, true),
    gate("ServiceAccountNodeAudienceRestriction", B, true, false),
    gate("ServiceAccountTokenJTI", G, true, true),
    gate("ServiceAccountTokenNodeBinding", G, true, true),
    gate("ServiceAccountTokenNodeBindingValidation", G, true, true),
    gate("ServiceAccountTokenPodNodeInfo", G, true, true),
    gate("ServiceTrafficDistribution", G, true, true),
    gate("SidecarContainers", G, true, true),
    gate("SizeBasedListCostEstimate", B, true, false),
    gate("StatefulSetSemanticRevisionComparison", B, true, false),
    gate("StorageCapacityScoring", A, false, false),
    gate("StorageNamespaceIndex", D, true, false),
    gate("StorageVersionAPI", A, false, false),
    gate("StorageVersionHash", B, true, false),
    gate("StorageVersionMigrator", B, false, false),
    gate("StreamingCollectionEncodingToJSON", G, true, true),
    gate("StreamingCollectionEncodingToProtobuf", G, true, true),
    gate("StrictIPCIDRValidation", A, false, false),
    gate("StructuredAuthenticationConfiguration", G, true, true),
    gate(
        "StructuredAuthenticationConfigurationEgressSelector",
        B,
        true,
        false,
    ),
    gate(
        "StructuredAuthenticationConfigurationJWKSMetrics",
        B,
        true,
        false,
    ),
    gate("StructuredAuthorizationConfiguration", G, true, true),
    gate("SupplementalGroupsPolicy", G, true, true),
    gate("SystemdWatchdog", G, true, true),
    gate("TaintTolerationComparisonOperators", A, false, false),
    gate("TokenRequestServiceAccountUIDValidation", B, true, false),
    gate("TopologyAwareHints", G, true, true),
    gate("TopologyManagerPolicyAlphaOptions", A, false, false),
    gate("TopologyManagerPolicyBetaOptions", B, true, false),
    gate("TopologyManagerPolicyOptions", G, true, false),
    gate("TranslateStreamCloseWebsocketRequests", B, true, false),
    gate("UnauthenticatedHTTP2DOSMitigation", B, true, false),
    gate("UnknownVersionInteroperabilityProxy", A, false, false),
    gate("UserNamespacesHostNetworkSupport", A, false, false),
    gate("UserNamespacesSupport", B, true, false),
    gate("VolumeAttributesClass", G, true, false),
    gate("VolumeLimitScaling", A, false, false),
    gate("WatchCacheInitializationPostStartHook", B, false, false),
    gate("WatchFromStorageWithoutResourceVersion", D, false, true),
    gate("WatchList", B, true, false),
    gate("WatchListClient", B, true, false),
    gate("WinDSR", G, true, true),
    gate("WinOverlay", G, true, true),
    gate("WindowsCPUAndMemoryAffinity", A, false, false),
    gate("WindowsGracefulNodeShutdown", B, true, false),
    gate("WindowsHostNetwork", D, false, false),
];

/// Gates that may only be on when other gates are (upstream's registered dependencies).
const DEPENDENCIES: &[(&str, &[&str])] = &[
    ("AuthorizeNodeWithSelectors", &["AuthorizeWithSelectors"]),
    ("ClusterTrustBundleProjection", &["ClusterTrustBundle"]),
    ("DRAAdminAccess", &["DynamicResourceAllocation"]),
    ("DRAConsumableCapacity", &["DynamicResourceAllocation"]),
    (
        "DRADeviceBindingConditions",
        &["DynamicResourceAllocation", "DRAResourceClaimDeviceStatus"],
    ),
    ("DRADeviceTaintRules", &["DRADeviceTaints"]),
    ("DRADeviceTaints", &["DynamicResourceAllocation"]),
    ("DRAExtendedResource", &["DynamicResourceAllocation"]),
    ("DRAPartitionableDevices", &["DynamicResourceAllocation"]),
    ("DRAPrioritizedList", &["DynamicResourceAllocation"]),
    ("DRASchedulerFilterTimeout", &["DynamicResourceAllocation"]),
    ("DeclarativeValidationTakeover", &["DeclarativeValidation"]),
    ("DisableAllocatorDualWrite", &["MultiCIDRServiceAllocator"]),
    ("GangScheduling", &["GenericWorkload"]),
    (
        "GracefulNodeShutdownBasedOnPodPriority",
        &["GracefulNodeShutdown"],
    ),
    ("ImageVolumeWithDigest", &["ImageVolume"]),
    (
        "InPlacePodLevelResourcesVerticalScaling",
        &[
            "InPlacePodVerticalScaling",
            "PodLevelResources",
            "NodeDeclaredFeatures",
        ],
    ),
    (
        "InPlacePodVerticalScalingAllocatedStatus",
        &["InPlacePodVerticalScaling"],
    ),
    (
        "InPlacePodVerticalScalingExclusiveCPUs",
        &["InPlacePodVerticalScaling"],
    ),
    (
        "InPlacePodVerticalScalingExclusiveMemory",
        &["InPlacePodVerticalScaling", "MemoryManager"],
    ),
    (
        "MatchLabelKeysInPodTopologySpreadSelectorMerge",
        &["MatchLabelKeysInPodTopologySpread"],
    ),
    ("PodCertificateRequest", &["AuthorizeNodeWithSelectors"]),
    (
        "PodLifecycleSleepActionAllowZero",
        &["PodLifecycleSleepAction"],
    ),
    ("ProcMountType", &["UserNamespacesSupport"]),
    ("ResourceHealthStatus", &["DynamicResourceAllocation"]),
    (
        "RestartAllContainersOnContainerExits",
        &["ContainerRestartRules", "NodeDeclaredFeatures"],
    ),
    (
        "ServiceAccountTokenNodeBinding",
        &["ServiceAccountTokenNodeBindingValidation"],
    ),
    ("StorageVersionAPI", &["APIServerIdentity"]),
    (
        "StructuredAuthenticationConfigurationEgressSelector",
        &["StructuredAuthenticationConfiguration"],
    ),
    (
        "StructuredAuthenticationConfigurationJWKSMetrics",
        &["StructuredAuthenticationConfiguration"],
    ),
    (
        "UnknownVersionInteroperabilityProxy",
        &["APIServerIdentity"],
    ),
    (
        "UserNamespacesHostNetworkSupport",
        &["UserNamespacesSupport"],
    ),
    ("WindowsCPUAndMemoryAffinity", &["MemoryManager"]),
    ("WindowsGracefulNodeShutdown", &["GracefulNodeShutdown"]),
];

/// The gates whose value changes what this server does.
pub const IMPLEMENTED: &[&str] = &["MutatingAdmissionPolicy"];

/// The registered gate called `name`.
pub fn lookup(name: &str) -> Option<&'static Gate> {
    GATES
        .binary_search_by(|g| g.name.cmp(name))
        .ok()
        .map(|i| &GATES[i])
}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// The parsed `--feature-gates`: the gates set explicitly (with `AllAlpha`/`AllBeta`
/// applied as upstream does: to every gate of that stage not set explicitly).
#[derive(Clone, Debug, Default)]
pub struct FeatureGates {
    set: BTreeMap<&'static str, bool>,
}

impl FeatureGates {
    /// Reads the values of `--feature-gates` (each one `[component:]Name=bool`); upstream's
    /// errors, and the warnings upstream logs (GA and deprecated gates set) plus ours (gates
    /// this server does not implement set to a non-default value).
    pub fn parse(values: &[String]) -> Result<(FeatureGates, Vec<String>), Vec<String>> {
        let pairs = component_pairs(values).map_err(|e| vec![e])?;
        // featureGate.Set: the first malformed pair ends the parse.
        let mut requested: BTreeMap<String, bool> = BTreeMap::new();
        for pair in &pairs {
            let Some((k, v)) = pair.split_once('=') else {
                return Err(vec![format!("missing bool value for {}", pair.trim())]);
            };
            let (k, v) = (k.trim(), v.trim());
            let Some(value) = parse_go_bool(v) else {
                return Err(vec![format!(
                    "invalid value of {k}={v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax"
                )]);
            };
            requested.insert(k.to_string(), value);
        }
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let mut set: BTreeMap<&'static str, bool> = BTreeMap::new();
        let mut all: Vec<(Stage, bool)> = Vec::new();
        for (name, &value) in &requested {
            let Some(gate) = lookup(name) else {
                return Err(vec![format!("unrecognized feature gate: {name}")]);
            };
            if gate.locked && gate.default != value {
                errors.push(format!(
                    "cannot set feature gate {name} to {value}, feature is locked to {}",
                    gate.default
                ));
                continue;
            }
            set.insert(gate.name, value);
            match gate.name {
                "AllAlpha" => all.push((Stage::Alpha, value)),
                "AllBeta" => all.push((Stage::Beta, value)),
                _ => {}
            }
            match gate.stage {
                Stage::Deprecated => warnings.push(format!(
                    "Setting deprecated feature gate {name}={value}. It will be removed in a future release."
                )),
                Stage::Ga => warnings.push(format!(
                    "Setting GA feature gate {name}={value}. It will be removed in a future release."
                )),
                _ => {}
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        for (stage, value) in all {
            for gate in GATES.iter().filter(|g| g.stage == stage && !g.locked) {
                set.entry(gate.name).or_insert(value);
            }
        }
        let gates = FeatureGates { set };
        let unmet = gates.unmet_dependencies();
        if !unmet.is_empty() {
            return Err(unmet);
        }
        let ignored: Vec<String> = gates
            .set
            .iter()
            .filter(|(name, value)| {
                lookup(name).is_some_and(|g| g.default != **value)
                    && !IMPLEMENTED.contains(name)
                    && !matches!(**name, "AllAlpha" | "AllBeta")
            })
            .map(|(name, value)| format!("{name}={value}"))
            .collect();
        if !ignored.is_empty() {
            warnings.push(format!(
                "feature gates accepted but not implemented by this server, which behaves as with their defaults: {}",
                ignored.join(", ")
            ));
        }
        Ok((gates, warnings))
    }

    /// Whether gate `name` is on: its value from the flags, else its default (unknown: off).
    pub fn enabled(&self, name: &str) -> bool {
        self.set
            .get(name)
            .copied()
            .unwrap_or_else(|| lookup(name).is_some_and(|g| g.default))
    }

    /// Upstream's `… is enabled, but depends on features that are disabled: [A B]`.
    fn unmet_dependencies(&self) -> Vec<String> {
        DEPENDENCIES
            .iter()
            .filter(|(feature, _)| self.enabled(feature))
            .filter_map(|(feature, deps)| {
                let disabled: Vec<&str> =
                    deps.iter().copied().filter(|d| !self.enabled(d)).collect();
                (!disabled.is_empty()).then(|| {
                    format!(
                        "{feature} is enabled, but depends on features that are disabled: [{}]",
                        disabled.join(" ")
                    )
                })
            })
            .collect()
    }
}

/// The `Name=bool` pairs for the `kube` component: values without a component belong to it,
/// `kube:` names it explicitly (the two may not be mixed); other components are not
/// registered in kube-apiserver.
fn component_pairs(values: &[String]) -> Result<Vec<String>, String> {
    let mut unprefixed = Vec::new();
    let mut kube = Vec::new();
    for item in values.iter().flat_map(|v| v.split(',')) {
        if item.is_empty() {
            continue;
        }
        match item.split_once(':') {
            None => unprefixed.push(item.trim().to_string()),
            Some((component, pair)) => match component.trim() {
                "" => unprefixed.push(pair.trim().to_string()),
                "kube" => kube.push(pair.trim().to_string()),
                other => return Err(format!("component not registered: {other}")),
            },
        }
    }
    if !unprefixed.is_empty() && !kube.is_empty() {
        return Err(
            "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use"
                .into(),
        );
    }
    unprefixed.extend(kube);
    Ok(unprefixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Result<(FeatureGates, Vec<String>), Vec<String>> {
        let values: Vec<String> = values.iter().map(|s| s.to_string()).collect();
        FeatureGates::parse(&values)
    }

    #[test]
    fn the_table_is_sorted_and_its_dependencies_are_registered_gates() {
        assert!(GATES.windows(2).all(|w| w[0].name < w[1].name));
        for (feature, deps) in DEPENDENCIES {
            assert!(lookup(feature).is_some(), "{feature}");
            for dep in *deps {
                assert!(lookup(dep).is_some(), "{dep}");
            }
        }
        // The defaults satisfy every dependency.
        assert!(parse(&[]).unwrap().0.unmet_dependencies().is_empty());
    }

    #[test]
    fn unknown_malformed_and_locked_gates_get_upstreams_errors() {
        assert_eq!(
            parse(&["NoSuchGate=true"]).unwrap_err(),
            ["unrecognized feature gate: NoSuchGate"]
        );
        assert_eq!(
            parse(&["MutatingAdmissionPolicy"]).unwrap_err(),
            ["missing bool value for MutatingAdmissionPolicy"]
        );
        assert_eq!(
            parse(&["MutatingAdmissionPolicy=yes"]).unwrap_err(),
            [
                "invalid value of MutatingAdmissionPolicy=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax"
            ]
        );
        assert_eq!(
            parse(&["ConsistentListFromCache=false"]).unwrap_err(),
            ["cannot set feature gate ConsistentListFromCache to false, feature is locked to true"]
        );
        assert_eq!(
            parse(&["wardle:Foo=true"]).unwrap_err(),
            ["component not registered: wardle"]
        );
        assert_eq!(
            parse(&["WatchList=true", "kube:OpenAPIEnums=true"]).unwrap_err(),
            [
                "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use"
            ]
        );
        assert_eq!(
            parse(&["GangScheduling=true"]).unwrap_err(),
            [
                "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"
            ]
        );
    }

    #[test]
    fn known_gates_are_accepted_with_upstreams_and_our_warnings() {
        let (gates, warnings) = parse(&[
            "kube:MutatingAdmissionPolicy=true",
            "kube:ConsistentListFromCache=true,kube:KMSv1=false",
            "kube:WatchList=false",
        ])
        .unwrap();
        assert!(gates.enabled("MutatingAdmissionPolicy"));
        assert!(!gates.enabled("WatchList"));
        assert!(gates.enabled("APIResponseCompression"));
        assert_eq!(
            warnings,
            [
                "Setting GA feature gate ConsistentListFromCache=true. It will be removed in a future release.",
                "Setting deprecated feature gate KMSv1=false. It will be removed in a future release.",
                "feature gates accepted but not implemented by this server, which behaves as with their defaults: WatchList=false",
            ]
        );
        // What envtest users commonly pass.
        assert!(parse(&["GenericWorkload=true,GangScheduling=true"]).is_ok());
    }

    #[test]
    fn all_beta_turns_on_every_beta_gate_not_set_explicitly() {
        let (gates, _) = parse(&["AllBeta=true", "CoordinatedLeaderElection=false"]).unwrap();
        assert!(gates.enabled("MutatingAdmissionPolicy"));
        assert!(gates.enabled("StorageVersionMigrator"));
        assert!(!gates.enabled("CoordinatedLeaderElection"));
        assert!(!gates.enabled("CBORServingAndStorage"));
    }
}
