// The translation unit that owns the tests' shared precompiled header
// (tests/CMakeLists.txt, MNEMO_TEST_PCH); it has no code of its own.
