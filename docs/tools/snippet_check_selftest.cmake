# SPDX-License-Identifier: MIT
# CTest docs_snippets_selftest: snippet_check on small trees it must accept or
# refuse, so that the docs check cannot quietly stop checking.
#   cmake -DCHECKER=path/to/snippet_check -DWORK_DIR=dir -P snippet_check_selftest.cmake
cmake_minimum_required(VERSION 3.25)

set(fence "```")
set(source [=[
struct Example {
    // [snippet:whole]
    int f() {
        // [snippet:line]
        return 42;
        // [end-snippet:line]
    }
    // [end-snippet:whole]
};
]=])

# Writes a tree with README.md = `readme`, runs the checker (with `args`), and
# fails unless its exit status is `want_status` and its output contains `want_text`.
function(expect name readme want_status want_text)
  set(args ${ARGN})
  set(root ${WORK_DIR}/${name})
  file(REMOVE_RECURSE ${root})
  file(WRITE ${root}/docs/snippets/example.cpp "${source}")
  file(WRITE ${root}/README.md "${readme}")
  execute_process(COMMAND ${CHECKER} ${args} ${root} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL want_status)
    message(FATAL_ERROR "${name}: exit status ${status}, expected ${want_status}\n${out}${err}")
  endif()
  string(FIND "${out}${err}" "${want_text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: output lacks '${want_text}'\n${out}${err}")
  endif()
  set(result_readme ${root}/README.md PARENT_SCOPE)
endfunction()

set(directive "<!-- snippet: docs/snippets/example.cpp whole -->")
set(good "${directive}\n${fence}cpp\nint f() {\n    return 42;\n}\n${fence}\n\n- a list item:\n\n  <!-- snippet: docs/snippets/example.cpp line -->\n  ${fence}cpp\n  return 42;\n  ${fence}\n\n${fence}sh\nnot checked\n${fence}\n")
expect(matching "${good}" 0 "2 C++ block(s)")

string(REPLACE "return 42;\n}" "return 43;\n}" edited "${good}")
expect(differs "${edited}" 1 "block differs from docs/snippets/example.cpp [whole] at its line 2")
expect(updated "${edited}" 0 "updated from docs/snippets/example.cpp [whole]" --update)
file(READ ${result_readme} rewritten)
if(NOT rewritten STREQUAL good)
  message(FATAL_ERROR "updated: README.md is not what the sources say:\n${rewritten}")
endif()

expect(no_directive "${fence}c++\nint x;\n${fence}\n" 1 "C++ block without a")
expect(no_region "<!-- snippet: docs/snippets/example.cpp nothere -->\n${fence}cpp\n${fence}\n" 1
       "no line '// [snippet:nothere]'")
expect(no_file "<!-- snippet: docs/snippets/missing.cpp whole -->\n${fence}cpp\n${fence}\n" 1 "does not exist")
expect(not_compiled "<!-- snippet: tests/example.cpp whole -->\n${fence}cpp\n${fence}\n" 1 "is not a docs/snippets/*.cpp file")
expect(orphan "${directive}\n${fence}text\nint f();\n${fence}\n" 1 "snippet line not followed by a")
expect(nested_fence "${fence}`markdown\n${fence}cpp\nunchecked\n${fence}\n${fence}`\n" 0 "0 C++ block(s)")
