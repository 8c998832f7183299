# Turns a PTX file into a C++ raw string literal: cmake -DIN=x.ptx -DOUT=x.ptx.inc -P embed_ptx.cmake
file(READ ${IN} text)
file(WRITE ${OUT} "R\"kfptx(${text})kfptx\"")
