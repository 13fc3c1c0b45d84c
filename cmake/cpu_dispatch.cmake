# Run-time CPU dispatch of onnx2ggml's kernel files (see kernels/isa.h). Each level's objects are linked into one
# relocatable object whose symbols, but for its o2g::isa_vN entry points, are made local (ELF) or renamed (PE/COFF):
# the inline functions and template instances each level compiled (std::vector's, ours) then never stand in for
# another level's, which would let an AVX-512 copy run on an AVX2 machine.
set(_o2g_kernel_sources)
foreach(f ${ONNX2GGML_KERNEL_FILES})
  list(APPEND _o2g_kernel_sources ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/${f}.cpp)
endforeach()
# Each kernel file is its own translation unit (their file-local tile constants share names), also in a unity build.
set_source_files_properties(${_o2g_kernel_sources} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

set(_o2g_dispatch OFF)
if(NOT ONNX2GGML_NATIVE AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
   AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND NOT APPLE AND CMAKE_OBJCOPY AND CMAKE_LINKER
   AND (NOT WIN32 OR CMAKE_NM))
  set(_o2g_dispatch ON)
endif()

if(_o2g_dispatch)
  message(STATUS "onnx2ggml: CPU kernels for x86-64-v2, v3 and v4, picked at run time")
  list(REMOVE_ITEM ONNX2GGML_OPS_SOURCES ${_o2g_kernel_sources})
  foreach(level 2 3 4)
    set(lib o2g_kernels_v${level})
    add_library(${lib} OBJECT ${_o2g_kernel_sources})
    target_compile_options(${lib} PRIVATE -march=x86-64-v${level} -mtune=generic -Wall -Wextra -Wno-unused-parameter -Wno-psabi)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # Static locals of inline functions would be STB_GNU_UNIQUE, which objcopy cannot make local.
      target_compile_options(${lib} PRIVATE -fno-gnu-unique)
    endif()
    target_compile_definitions(${lib} PRIVATE O2G_ISA=isa_v${level})
    target_include_directories(${lib} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/src)
    target_link_libraries(${lib} PRIVATE ${ONNX2GGML_GGML_LIBS})
    set_target_properties(${lib} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/o2g_kernels_v${level}.o)
    if(WIN32)  # PE/COFF (mingw-w64): the other symbols renamed (cmake/isa_rename.cmake says why)
      set(_isolate ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DOBJDUMP=${CMAKE_OBJDUMP} -DOBJCOPY=${CMAKE_OBJCOPY} -DIN=${obj}.tmp -DOUT=${obj}
          -DKEEP=_ZN3o2g6isa_v${level} -DSUFFIX=isa_v${level} -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/isa_rename.cmake)
    else()     # ELF: the other symbols made local
      set(_isolate ${CMAKE_OBJCOPY} --wildcard "--keep-global-symbol=_ZN3o2g6isa_v${level}*" --remove-section=.group
          ${obj}.tmp ${obj})
    endif()
    add_custom_command(OUTPUT ${obj}
      COMMAND ${CMAKE_LINKER} -r -o ${obj}.tmp $<TARGET_OBJECTS:${lib}>
      COMMAND ${_isolate}
      DEPENDS ${lib} $<TARGET_OBJECTS:${lib}> ${CMAKE_CURRENT_SOURCE_DIR}/cmake/isa_rename.cmake
      COMMAND_EXPAND_LISTS VERBATIM
      COMMENT "Kernels for x86-64-v${level}, isolated from the other levels")
    set_source_files_properties(${obj} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    list(APPEND ONNX2GGML_OPS_SOURCES ${obj})
  endforeach()
  set(_o2g_ops_defs O2G_CPU_DISPATCH=1)
elseif(ONNX2GGML_NATIVE AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  message(STATUS "onnx2ggml: CPU kernels built with -march=${ONNX2GGML_KERNEL_ARCH}")
  set_source_files_properties(${_o2g_kernel_sources} PROPERTIES COMPILE_OPTIONS "-march=${ONNX2GGML_KERNEL_ARCH}")
  set(_o2g_ops_defs O2G_NATIVE_KERNELS=1)
else()
  message(STATUS "onnx2ggml: CPU kernels built for the compiler's default target")
  set(_o2g_ops_defs)
endif()
