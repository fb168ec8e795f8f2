au BufRead,BufNewFile *.weft setfiletype weft
