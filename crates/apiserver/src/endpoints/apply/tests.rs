//! Apply and managed fields tests, after structured-merge-diff's merge tests and the field
//! manager tests of k8s.io/apiserver.
