#[cfg(feature = "build-server")]
fn should_build_server() -> bool {
    true
}

#[cfg(not(feature = "build-server"))]
fn should_build_server() -> bool {
    false
}

fn main() {
    let proto_root = "proto";
    println!("cargo:rerun-if-changed={proto_root}");

    // Vendored change: the .proto files are compiled by protox (a protobuf compiler written in
    // Rust) instead of a system `protoc`; tonic-prost-build generates the same code from the
    // resulting descriptor set. See VENDORED.md.
    let descriptors = protox::compile(
        [
            "proto/etcd/api/authpb/auth.proto",
            "proto/etcd/api/etcdserverpb/rpc.proto",
            "proto/etcd/api/mvccpb/kv.proto",
            "proto/etcd/server/etcdserver/api/v3election/v3electionpb/v3election.proto",
            "proto/etcd/server/etcdserver/api/v3lock/v3lockpb/v3lock.proto",
        ],
        [proto_root],
    )
    .expect("Failed to parse proto files");

    tonic_prost_build::configure()
        .build_server(should_build_server())
        .compile_fds(descriptors)
        .expect("Failed to compile proto files");
}
