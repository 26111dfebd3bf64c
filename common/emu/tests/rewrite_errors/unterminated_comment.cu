/* A comment
   that never ends
