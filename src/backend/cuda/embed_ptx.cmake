# Turns a PTX file into a C++ raw string literal: cmake -DIN=x.ptx -DOUT=x.ptx.inc -P embed_ptx.cmake
# A missing or empty PTX (nvcc failed, or wrote nothing) fails the build here, saying so.
if(NOT EXISTS "${IN}")
  message(FATAL_ERROR "embed_ptx: ${IN} was not written: nvcc -ptx peaks.cu failed (see its output above)")
endif()
file(READ ${IN} text)
if(text STREQUAL "")
  message(FATAL_ERROR "embed_ptx: ${IN} is empty: nvcc -ptx peaks.cu failed (see its output above)")
endif()
file(WRITE ${OUT} "R\"kfptx(${text})kfptx\"")
