//! Field tables of pod templates and the workloads kubectl creates through typed clients
//! (`kubectl create deployment|job|cronjob` send protobuf). Generated once from `k8s-pb`'s
//! field tags, with JSON names and Go pointer fields checked by hand. Messages without a table
//! (affinity, lifecycle hooks, most volume sources, …) are `Unsupported`: such a body is refused
//! with 415 instead of losing the field.

use super::schema::{Message, Ty, inline, map, ptr, rep, val};
use super::types::{LABEL_SELECTOR, LOCAL_OBJECT_REFERENCE, OBJECT_META, OBJECT_REFERENCE};

use Ty::{Bool, Int, IntOrString, Quantity, String as Str, Time, Unsupported};

const fn msg(m: &'static Message) -> Ty {
    Ty::Message(m)
}

// ---- core/v1 pod template -------------------------------------------------------------------

static POD_TEMPLATE_SPEC: Message = Message {
    name: "PodTemplateSpec",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&POD_SPEC)),
    ],
};

static POD_SPEC: Message = Message {
    name: "PodSpec",
    fields: &[
        rep(1, "volumes", msg(&VOLUME)),
        rep(20, "initContainers", msg(&CONTAINER)),
        rep(2, "containers", msg(&CONTAINER)),
        rep(34, "ephemeralContainers", Unsupported),
        val(3, "restartPolicy", Str),
        ptr(4, "terminationGracePeriodSeconds", Int),
        ptr(5, "activeDeadlineSeconds", Int),
        val(6, "dnsPolicy", Str),
        map(7, "nodeSelector", &Str),
        val(8, "serviceAccountName", Str),
        val(9, "serviceAccount", Str),
        ptr(21, "automountServiceAccountToken", Bool),
        val(10, "nodeName", Str),
        val(11, "hostNetwork", Bool),
        val(12, "hostPID", Bool),
        val(13, "hostIPC", Bool),
        ptr(27, "shareProcessNamespace", Bool),
        ptr(14, "securityContext", msg(&POD_SECURITY_CONTEXT)),
        rep(15, "imagePullSecrets", msg(&LOCAL_OBJECT_REFERENCE)),
        val(16, "hostname", Str),
        val(17, "subdomain", Str),
        ptr(18, "affinity", Unsupported),
        val(19, "schedulerName", Str),
        rep(22, "tolerations", msg(&TOLERATION)),
        rep(23, "hostAliases", Unsupported),
        val(24, "priorityClassName", Str),
        ptr(25, "priority", Int),
        ptr(26, "dnsConfig", Unsupported),
        rep(28, "readinessGates", Unsupported),
        ptr(29, "runtimeClassName", Str),
        ptr(30, "enableServiceLinks", Bool),
        ptr(31, "preemptionPolicy", Str),
        map(32, "overhead", &Quantity),
        rep(33, "topologySpreadConstraints", Unsupported),
        ptr(35, "setHostnameAsFQDN", Bool),
        ptr(36, "os", Unsupported),
        ptr(37, "hostUsers", Bool),
        rep(38, "schedulingGates", Unsupported),
        rep(39, "resourceClaims", Unsupported),
        ptr(40, "resources", msg(&RESOURCE_REQUIREMENTS)),
        ptr(41, "hostnameOverride", Str),
        ptr(42, "workloadRef", Unsupported),
    ],
};

static CONTAINER: Message = Message {
    name: "Container",
    fields: &[
        val(1, "name", Str),
        val(2, "image", Str),
        rep(3, "command", Str),
        rep(4, "args", Str),
        val(5, "workingDir", Str),
        rep(6, "ports", msg(&CONTAINER_PORT)),
        rep(19, "envFrom", msg(&ENV_FROM_SOURCE)),
        rep(7, "env", msg(&ENV_VAR)),
        val(8, "resources", msg(&RESOURCE_REQUIREMENTS)),
        rep(23, "resizePolicy", Unsupported),
        ptr(24, "restartPolicy", Str),
        rep(25, "restartPolicyRules", Unsupported),
        rep(9, "volumeMounts", msg(&VOLUME_MOUNT)),
        rep(21, "volumeDevices", Unsupported),
        ptr(10, "livenessProbe", msg(&PROBE)),
        ptr(11, "readinessProbe", msg(&PROBE)),
        ptr(22, "startupProbe", msg(&PROBE)),
        ptr(12, "lifecycle", Unsupported),
        val(13, "terminationMessagePath", Str),
        val(20, "terminationMessagePolicy", Str),
        val(14, "imagePullPolicy", Str),
        ptr(15, "securityContext", msg(&SECURITY_CONTEXT)),
        val(16, "stdin", Bool),
        val(17, "stdinOnce", Bool),
        val(18, "tty", Bool),
    ],
};

static CONTAINER_PORT: Message = Message {
    name: "ContainerPort",
    fields: &[
        val(1, "name", Str),
        val(2, "hostPort", Int),
        ptr(3, "containerPort", Int),
        val(4, "protocol", Str),
        val(5, "hostIP", Str),
    ],
};

static ENV_VAR: Message = Message {
    name: "EnvVar",
    fields: &[
        val(1, "name", Str),
        val(2, "value", Str),
        ptr(3, "valueFrom", msg(&ENV_VAR_SOURCE)),
    ],
};

static ENV_VAR_SOURCE: Message = Message {
    name: "EnvVarSource",
    fields: &[
        ptr(1, "fieldRef", msg(&OBJECT_FIELD_SELECTOR)),
        ptr(2, "resourceFieldRef", msg(&RESOURCE_FIELD_SELECTOR)),
        ptr(3, "configMapKeyRef", msg(&CONFIG_MAP_KEY_SELECTOR)),
        ptr(4, "secretKeyRef", msg(&SECRET_KEY_SELECTOR)),
        ptr(5, "fileKeyRef", Unsupported),
    ],
};

static OBJECT_FIELD_SELECTOR: Message = Message {
    name: "ObjectFieldSelector",
    fields: &[val(1, "apiVersion", Str), val(2, "fieldPath", Str)],
};

static RESOURCE_FIELD_SELECTOR: Message = Message {
    name: "ResourceFieldSelector",
    fields: &[
        val(1, "containerName", Str),
        val(2, "resource", Str),
        ptr(3, "divisor", Quantity),
    ],
};

static CONFIG_MAP_KEY_SELECTOR: Message = Message {
    name: "ConfigMapKeySelector",
    fields: &[
        inline(1, &LOCAL_OBJECT_REFERENCE),
        val(2, "key", Str),
        ptr(3, "optional", Bool),
    ],
};

static SECRET_KEY_SELECTOR: Message = Message {
    name: "SecretKeySelector",
    fields: &[
        inline(1, &LOCAL_OBJECT_REFERENCE),
        val(2, "key", Str),
        ptr(3, "optional", Bool),
    ],
};

static ENV_FROM_SOURCE: Message = Message {
    name: "EnvFromSource",
    fields: &[
        val(1, "prefix", Str),
        ptr(2, "configMapRef", msg(&CONFIG_MAP_ENV_SOURCE)),
        ptr(3, "secretRef", msg(&SECRET_ENV_SOURCE)),
    ],
};

static CONFIG_MAP_ENV_SOURCE: Message = Message {
    name: "ConfigMapEnvSource",
    fields: &[inline(1, &LOCAL_OBJECT_REFERENCE), ptr(2, "optional", Bool)],
};

static SECRET_ENV_SOURCE: Message = Message {
    name: "SecretEnvSource",
    fields: &[inline(1, &LOCAL_OBJECT_REFERENCE), ptr(2, "optional", Bool)],
};

static VOLUME_MOUNT: Message = Message {
    name: "VolumeMount",
    fields: &[
        val(1, "name", Str),
        val(2, "readOnly", Bool),
        ptr(7, "recursiveReadOnly", Str),
        val(3, "mountPath", Str),
        val(4, "subPath", Str),
        ptr(5, "mountPropagation", Str),
        val(6, "subPathExpr", Str),
    ],
};

static RESOURCE_REQUIREMENTS: Message = Message {
    name: "ResourceRequirements",
    fields: &[
        map(1, "limits", &Quantity),
        map(2, "requests", &Quantity),
        rep(3, "claims", msg(&RESOURCE_CLAIM)),
    ],
};

static RESOURCE_CLAIM: Message = Message {
    name: "ResourceClaim",
    fields: &[val(1, "name", Str), val(2, "request", Str)],
};

static PROBE: Message = Message {
    name: "Probe",
    fields: &[
        inline(1, &PROBE_HANDLER),
        val(2, "initialDelaySeconds", Int),
        val(3, "timeoutSeconds", Int),
        val(4, "periodSeconds", Int),
        val(5, "successThreshold", Int),
        val(6, "failureThreshold", Int),
        ptr(7, "terminationGracePeriodSeconds", Int),
    ],
};

static PROBE_HANDLER: Message = Message {
    name: "ProbeHandler",
    fields: &[
        ptr(1, "exec", msg(&EXEC_ACTION)),
        ptr(2, "httpGet", msg(&HTTP_GET_ACTION)),
        ptr(3, "tcpSocket", msg(&TCP_SOCKET_ACTION)),
        ptr(4, "grpc", msg(&GRPC_ACTION)),
    ],
};

static EXEC_ACTION: Message = Message {
    name: "ExecAction",
    fields: &[rep(1, "command", Str)],
};

static HTTP_GET_ACTION: Message = Message {
    name: "HttpGetAction",
    fields: &[
        val(1, "path", Str),
        val(2, "port", IntOrString),
        val(3, "host", Str),
        val(4, "scheme", Str),
        rep(5, "httpHeaders", msg(&HTTP_HEADER)),
    ],
};

static HTTP_HEADER: Message = Message {
    name: "HttpHeader",
    fields: &[val(1, "name", Str), val(2, "value", Str)],
};

static TCP_SOCKET_ACTION: Message = Message {
    name: "TcpSocketAction",
    fields: &[val(1, "port", IntOrString), val(2, "host", Str)],
};

static GRPC_ACTION: Message = Message {
    name: "GrpcAction",
    fields: &[val(1, "port", Int), ptr(2, "service", Str)],
};

static SECURITY_CONTEXT: Message = Message {
    name: "SecurityContext",
    fields: &[
        ptr(1, "capabilities", msg(&CAPABILITIES)),
        ptr(2, "privileged", Bool),
        ptr(3, "seLinuxOptions", Unsupported),
        ptr(10, "windowsOptions", Unsupported),
        ptr(4, "runAsUser", Int),
        ptr(8, "runAsGroup", Int),
        ptr(5, "runAsNonRoot", Bool),
        ptr(6, "readOnlyRootFilesystem", Bool),
        ptr(7, "allowPrivilegeEscalation", Bool),
        ptr(9, "procMount", Str),
        ptr(11, "seccompProfile", msg(&SECCOMP_PROFILE)),
        ptr(12, "appArmorProfile", Unsupported),
    ],
};

static POD_SECURITY_CONTEXT: Message = Message {
    name: "PodSecurityContext",
    fields: &[
        ptr(1, "seLinuxOptions", Unsupported),
        ptr(8, "windowsOptions", Unsupported),
        ptr(2, "runAsUser", Int),
        ptr(6, "runAsGroup", Int),
        ptr(3, "runAsNonRoot", Bool),
        rep(4, "supplementalGroups", Int),
        ptr(12, "supplementalGroupsPolicy", Str),
        ptr(5, "fsGroup", Int),
        rep(7, "sysctls", msg(&SYSCTL)),
        ptr(9, "fsGroupChangePolicy", Str),
        ptr(10, "seccompProfile", msg(&SECCOMP_PROFILE)),
        ptr(11, "appArmorProfile", Unsupported),
        ptr(13, "seLinuxChangePolicy", Str),
    ],
};

static CAPABILITIES: Message = Message {
    name: "Capabilities",
    fields: &[rep(1, "add", Str), rep(2, "drop", Str)],
};

static SECCOMP_PROFILE: Message = Message {
    name: "SeccompProfile",
    fields: &[val(1, "type", Str), ptr(2, "localhostProfile", Str)],
};

static SYSCTL: Message = Message {
    name: "Sysctl",
    fields: &[val(1, "name", Str), val(2, "value", Str)],
};

static TOLERATION: Message = Message {
    name: "Toleration",
    fields: &[
        val(1, "key", Str),
        val(2, "operator", Str),
        val(3, "value", Str),
        val(4, "effect", Str),
        ptr(5, "tolerationSeconds", Int),
    ],
};

static VOLUME: Message = Message {
    name: "Volume",
    fields: &[val(1, "name", Str), inline(2, &VOLUME_SOURCE)],
};

static VOLUME_SOURCE: Message = Message {
    name: "VolumeSource",
    fields: &[
        ptr(1, "hostPath", msg(&HOST_PATH_VOLUME_SOURCE)),
        ptr(2, "emptyDir", msg(&EMPTY_DIR_VOLUME_SOURCE)),
        ptr(3, "gcePersistentDisk", Unsupported),
        ptr(4, "awsElasticBlockStore", Unsupported),
        ptr(5, "gitRepo", Unsupported),
        ptr(6, "secret", msg(&SECRET_VOLUME_SOURCE)),
        ptr(7, "nfs", Unsupported),
        ptr(8, "iscsi", Unsupported),
        ptr(9, "glusterfs", Unsupported),
        ptr(
            10,
            "persistentVolumeClaim",
            msg(&PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE),
        ),
        ptr(11, "rbd", Unsupported),
        ptr(12, "flexVolume", Unsupported),
        ptr(13, "cinder", Unsupported),
        ptr(14, "cephfs", Unsupported),
        ptr(15, "flocker", Unsupported),
        ptr(16, "downwardAPI", Unsupported),
        ptr(17, "fc", Unsupported),
        ptr(18, "azureFile", Unsupported),
        ptr(19, "configMap", msg(&CONFIG_MAP_VOLUME_SOURCE)),
        ptr(20, "vsphereVolume", Unsupported),
        ptr(21, "quobyte", Unsupported),
        ptr(22, "azureDisk", Unsupported),
        ptr(23, "photonPersistentDisk", Unsupported),
        ptr(26, "projected", Unsupported),
        ptr(24, "portworxVolume", Unsupported),
        ptr(25, "scaleIO", Unsupported),
        ptr(27, "storageos", Unsupported),
        ptr(28, "csi", Unsupported),
        ptr(29, "ephemeral", Unsupported),
        ptr(30, "image", Unsupported),
    ],
};

static CONFIG_MAP_VOLUME_SOURCE: Message = Message {
    name: "ConfigMapVolumeSource",
    fields: &[
        inline(1, &LOCAL_OBJECT_REFERENCE),
        rep(2, "items", msg(&KEY_TO_PATH)),
        ptr(3, "defaultMode", Int),
        ptr(4, "optional", Bool),
    ],
};

static SECRET_VOLUME_SOURCE: Message = Message {
    name: "SecretVolumeSource",
    fields: &[
        val(1, "secretName", Str),
        rep(2, "items", msg(&KEY_TO_PATH)),
        ptr(3, "defaultMode", Int),
        ptr(4, "optional", Bool),
    ],
};

static KEY_TO_PATH: Message = Message {
    name: "KeyToPath",
    fields: &[val(1, "key", Str), val(2, "path", Str), ptr(3, "mode", Int)],
};

static EMPTY_DIR_VOLUME_SOURCE: Message = Message {
    name: "EmptyDirVolumeSource",
    fields: &[val(1, "medium", Str), ptr(2, "sizeLimit", Quantity)],
};

static HOST_PATH_VOLUME_SOURCE: Message = Message {
    name: "HostPathVolumeSource",
    fields: &[val(1, "path", Str), ptr(2, "type", Str)],
};

static PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: Message = Message {
    name: "PersistentVolumeClaimVolumeSource",
    fields: &[val(1, "claimName", Str), val(2, "readOnly", Bool)],
};

// ---- apps/v1, batch/v1 --------------------------------------------------------------------

pub(super) static DEPLOYMENT: Message = Message {
    name: "Deployment",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&DEPLOYMENT_SPEC)),
        val(3, "status", msg(&DEPLOYMENT_STATUS)),
    ],
};

static DEPLOYMENT_SPEC: Message = Message {
    name: "DeploymentSpec",
    fields: &[
        ptr(1, "replicas", Int),
        ptr(2, "selector", msg(&LABEL_SELECTOR)),
        val(3, "template", msg(&POD_TEMPLATE_SPEC)),
        val(4, "strategy", msg(&DEPLOYMENT_STRATEGY)),
        val(5, "minReadySeconds", Int),
        ptr(6, "revisionHistoryLimit", Int),
        val(7, "paused", Bool),
        ptr(9, "progressDeadlineSeconds", Int),
    ],
};

static DEPLOYMENT_STRATEGY: Message = Message {
    name: "DeploymentStrategy",
    fields: &[
        val(1, "type", Str),
        ptr(2, "rollingUpdate", msg(&ROLLING_UPDATE_DEPLOYMENT)),
    ],
};

static ROLLING_UPDATE_DEPLOYMENT: Message = Message {
    name: "RollingUpdateDeployment",
    fields: &[
        ptr(1, "maxUnavailable", IntOrString),
        ptr(2, "maxSurge", IntOrString),
    ],
};

static DEPLOYMENT_STATUS: Message = Message {
    name: "DeploymentStatus",
    fields: &[
        val(1, "observedGeneration", Int),
        val(2, "replicas", Int),
        val(3, "updatedReplicas", Int),
        val(7, "readyReplicas", Int),
        val(4, "availableReplicas", Int),
        val(5, "unavailableReplicas", Int),
        ptr(9, "terminatingReplicas", Int),
        rep(6, "conditions", msg(&DEPLOYMENT_CONDITION)),
        ptr(8, "collisionCount", Int),
    ],
};

static DEPLOYMENT_CONDITION: Message = Message {
    name: "DeploymentCondition",
    fields: &[
        val(1, "type", Str),
        val(2, "status", Str),
        val(6, "lastUpdateTime", Time),
        val(7, "lastTransitionTime", Time),
        val(4, "reason", Str),
        val(5, "message", Str),
    ],
};

pub(super) static JOB: Message = Message {
    name: "Job",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&JOB_SPEC)),
        val(3, "status", msg(&JOB_STATUS)),
    ],
};

static JOB_SPEC: Message = Message {
    name: "JobSpec",
    fields: &[
        ptr(1, "parallelism", Int),
        ptr(2, "completions", Int),
        ptr(3, "activeDeadlineSeconds", Int),
        ptr(11, "podFailurePolicy", Unsupported),
        ptr(16, "successPolicy", Unsupported),
        ptr(7, "backoffLimit", Int),
        ptr(12, "backoffLimitPerIndex", Int),
        ptr(13, "maxFailedIndexes", Int),
        ptr(4, "selector", msg(&LABEL_SELECTOR)),
        ptr(5, "manualSelector", Bool),
        val(6, "template", msg(&POD_TEMPLATE_SPEC)),
        ptr(8, "ttlSecondsAfterFinished", Int),
        ptr(9, "completionMode", Str),
        ptr(10, "suspend", Bool),
        ptr(14, "podReplacementPolicy", Str),
        ptr(15, "managedBy", Str),
    ],
};

pub(super) static CRON_JOB: Message = Message {
    name: "CronJob",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&CRON_JOB_SPEC)),
        val(3, "status", msg(&CRON_JOB_STATUS)),
    ],
};

static CRON_JOB_SPEC: Message = Message {
    name: "CronJobSpec",
    fields: &[
        val(1, "schedule", Str),
        ptr(8, "timeZone", Str),
        ptr(2, "startingDeadlineSeconds", Int),
        val(3, "concurrencyPolicy", Str),
        ptr(4, "suspend", Bool),
        val(5, "jobTemplate", msg(&JOB_TEMPLATE_SPEC)),
        ptr(6, "successfulJobsHistoryLimit", Int),
        ptr(7, "failedJobsHistoryLimit", Int),
    ],
};

static JOB_TEMPLATE_SPEC: Message = Message {
    name: "JobTemplateSpec",
    fields: &[
        val(1, "metadata", msg(&OBJECT_META)),
        val(2, "spec", msg(&JOB_SPEC)),
    ],
};

static JOB_STATUS: Message = Message {
    name: "JobStatus",
    fields: &[
        rep(1, "conditions", msg(&JOB_CONDITION)),
        ptr(2, "startTime", Time),
        ptr(3, "completionTime", Time),
        val(4, "active", Int),
        val(5, "succeeded", Int),
        val(6, "failed", Int),
        ptr(11, "terminating", Int),
        val(7, "completedIndexes", Str),
        ptr(10, "failedIndexes", Str),
        ptr(
            8,
            "uncountedTerminatedPods",
            msg(&UNCOUNTED_TERMINATED_PODS),
        ),
        ptr(9, "ready", Int),
    ],
};

static JOB_CONDITION: Message = Message {
    name: "JobCondition",
    fields: &[
        val(1, "type", Str),
        val(2, "status", Str),
        val(3, "lastProbeTime", Time),
        val(4, "lastTransitionTime", Time),
        val(5, "reason", Str),
        val(6, "message", Str),
    ],
};

static UNCOUNTED_TERMINATED_PODS: Message = Message {
    name: "UncountedTerminatedPods",
    fields: &[rep(1, "succeeded", Str), rep(2, "failed", Str)],
};

static CRON_JOB_STATUS: Message = Message {
    name: "CronJobStatus",
    fields: &[
        rep(1, "active", msg(&OBJECT_REFERENCE)),
        ptr(4, "lastScheduleTime", Time),
        ptr(5, "lastSuccessfulTime", Time),
    ],
};
