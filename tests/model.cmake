# Model-layer tests find the shared fixture models (llama-tiny.gguf, tokenizer/*.gguf,
# MODELS.md) through MNEMO_FIXTURES_DIR; a test skips when the directory is absent.
set(MNEMO_FIXTURES_DIR "${PROJECT_SOURCE_DIR}/../shared/fixtures"
    CACHE PATH "Directory of the reference fixture models (GGUF files and logits)")
file(GLOB _mnemo_model_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/model/*_test.cpp)
foreach(src IN LISTS _mnemo_model_tests)
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "_test$" "" name ${name})
  if(TARGET test_model_${name})
    target_compile_definitions(test_model_${name} PRIVATE
                               MNEMO_FIXTURES_DIR="${MNEMO_FIXTURES_DIR}")
  endif()
endforeach()
