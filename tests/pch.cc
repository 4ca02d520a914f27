// The target that compiles the tests' shared precompiled header
// (tests/CMakeLists.txt, mccl_test_pch); it has no code of its own.
