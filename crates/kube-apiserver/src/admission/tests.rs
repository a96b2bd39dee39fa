use clap::Parser;

use super::*;

fn opts(args: &[&str]) -> Options {
    let mut all = vec!["kube-apiserver"];
    all.extend_from_slice(args);
    Options::try_parse_from(all).unwrap()
}

#[test]
fn default_plugins_run_in_upstream_order() {
    let enabled = enabled_plugins(&opts(&[])).unwrap();
    assert_eq!(enabled.first(), Some(&"NamespaceLifecycle"));
    assert_eq!(enabled.last(), Some(&"ResourceQuota"));
    assert!(!enabled.contains(&"NodeRestriction"));
    assert!(!enabled.contains(&"AlwaysPullImages"));
    assert_eq!(enabled.len(), DEFAULT_ON_PLUGINS.len());
}

#[test]
fn enabling_and_disabling_keeps_the_fixed_order() {
    let enabled = enabled_plugins(&opts(&[
        "--enable-admission-plugins=AlwaysPullImages,NodeRestriction",
        "--disable-admission-plugins=PodSecurity",
    ]))
    .unwrap();
    let pos = |n| enabled.iter().position(|e| *e == n).unwrap();
    assert!(pos("NodeRestriction") < pos("AlwaysPullImages"));
    assert!(!enabled.contains(&"PodSecurity"));
    let only = enabled_plugins(&opts(&[
        "--admission-control=ResourceQuota,NamespaceLifecycle",
    ]))
    .unwrap();
    assert_eq!(only, vec!["NamespaceLifecycle", "ResourceQuota"]);
}

#[test]
fn unknown_and_conflicting_names_are_one_line_errors() {
    let err = enabled_plugins(&opts(&["--enable-admission-plugins=Foo"])).unwrap_err();
    assert_eq!(err, "enable-admission-plugins plugin \"Foo\" is unknown");
    let err = enabled_plugins(&opts(&[
        "--enable-admission-plugins=PodSecurity",
        "--disable-admission-plugins=PodSecurity",
    ]))
    .unwrap_err();
    assert_eq!(
        err,
        "[PodSecurity] in enable-admission-plugins and disable-admission-plugins overlapped"
    );
    let err = enabled_plugins(&opts(&[
        "--admission-control=PodSecurity",
        "--disable-admission-plugins=Priority",
    ]))
    .unwrap_err();
    assert!(err.contains("mutually exclusive"), "{err}");
}

#[test]
fn plugin_configuration_comes_from_a_path_or_inline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("eventratelimit.yaml"),
        "kind: Configuration\nlimits:\n- type: Server\n  qps: 5\n",
    )
    .unwrap();
    let file = dir.path().join("admission.yaml");
    std::fs::write(
        &file,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: EventRateLimit\n  path: eventratelimit.yaml\n- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n    kind: PodSecurityConfiguration\n",
    )
    .unwrap();
    let configs = config::read(&file).unwrap();
    let erl = configs.plugin("EventRateLimit").unwrap().unwrap();
    assert_eq!(erl["limits"][0]["qps"], 5);
    let ps = configs.plugin("PodSecurity").unwrap().unwrap();
    assert_eq!(ps["kind"], "PodSecurityConfiguration");
    assert!(configs.plugin("ResourceQuota").unwrap().is_none());
    std::fs::write(&file, "apiVersion: v1\nkind: Pod\n").unwrap();
    assert!(
        config::read(&file)
            .unwrap_err()
            .contains("AdmissionConfiguration")
    );
}
