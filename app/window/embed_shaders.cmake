# Writes the GLSL sources given in SHADERS (a ;-list of paths) into OUTPUT as C string constants,
# so that the program finds its shaders wherever it runs from. Run at build time:
#   cmake -DSHADERS=a.glsl;b.glsl -DOUTPUT=out.h -P embed_shaders.cmake
# blit.frag.glsl becomes `static const char inkray_shader_blit_frag[]`. Bytes are written in hex,
# so that no character of the source needs escaping.
set(text "/* Generated from the GLSL files in shaders/ by app/window/embed_shaders.cmake; do not edit. */\n")
string(APPEND text "#ifndef INKRAY_SHADERS_H\n#define INKRAY_SHADERS_H\n")
foreach(path IN LISTS SHADERS)
  get_filename_component(file "${path}" NAME)
  string(REGEX REPLACE "\\.glsl$" "" name "${file}")
  string(REPLACE "." "_" name "${name}")
  file(READ "${path}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n  " bytes "${bytes}")
  string(APPEND text "\n/* ${file} */\nstatic const char inkray_shader_${name}[] = {\n  ${bytes}0x00};\n")
endforeach()
string(APPEND text "\n#endif\n")
# Only touch the file when it changes, so that an unchanged shader set rebuilds nothing.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${text}")
