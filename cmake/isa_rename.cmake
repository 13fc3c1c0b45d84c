# cmake -DNM=... -DOBJDUMP=... -DOBJCOPY=... -DIN=obj -DOUT=obj -DKEEP=prefix -DSUFFIX=... -P isa_rename.cmake
# Renames every global symbol IN defines, but those starting with KEEP (a level's entry points), to NAME$SUFFIX,
# and every COMDAT section (.text$NAME) likewise: PE/COFF links COMDAT copies of inline functions by name, so one
# level's copies must have names of their own (making them local, as on ELF, leaves other objects' references to
# a discarded copy).
function(run_tool out)  # runs ARGN, its output into `out`; stops the build if it fails
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

run_tool(syms ${NM} -g --defined-only ${IN})
string(REPLACE "\n" ";" lines "${syms}")
set(map "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[0-9a-fA-F]+ [A-Za-z] (.+)$")
    set(name "${CMAKE_MATCH_1}")
    string(FIND "${name}" "${KEEP}" at)
    if(NOT at EQUAL 0)
      string(APPEND map "${name} ${name}$${SUFFIX}\n")
    endif()
  endif()
endforeach()
file(WRITE ${OUT}.syms "${map}")
# The linker also matches COMDAT sections by name (.text$NAME): those get the suffix too.
run_tool(heads ${OBJDUMP} -h ${IN})
string(REPLACE "\n" ";" lines "${heads}")
set(args "")
foreach(line IN LISTS lines)
  if(line MATCHES "^ *[0-9]+ ([^ ]*\\$[^ ]*) ")
    string(APPEND args "--rename-section \"${CMAKE_MATCH_1}=${CMAKE_MATCH_1}$${SUFFIX}\"\n")
  endif()
endforeach()
file(WRITE ${OUT}.args "${args}")
run_tool(ignored ${OBJCOPY} --redefine-syms=${OUT}.syms @${OUT}.args ${IN} ${OUT})
