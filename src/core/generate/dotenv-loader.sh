# The values this script needs, read from .env as data (never run as shell code): quotes removed,
# \" \\ \$ \n undone inside double quotes, an inline # comment dropped, as compose reads them.
dotenv_value() {
  local raw=$1 out="" rest chunk n
  case "$raw" in
    \"*)
      # A run of plain text at a time, up to the next backslash or quote: linear in the value's
      # length (one character at a time, a long value took seconds).
      rest=${raw:1}
      while [ -n "$rest" ]; do
        chunk=${rest%%[\\\"]*}
        out+=$chunk
        rest=${rest:${#chunk}}
        case "$rest" in
          \"* | "") break ;;
        esac
        n=${rest:1:1}
        if [ -z "$n" ]; then out+='\'; break; fi
        case "$n" in n) out+=$'\n' ;; '"' | '\' | '$') out+=$n ;; *) out+="\\$n" ;; esac
        rest=${rest:2}
      done ;;
    \'*) out=${raw#\'}; out=${out%%\'*} ;;
    *) out=${raw%%[[:space:]]#*}; out=${out%"${out##*[![:space:]]}"} ;;
  esac
  printf '%s' "$out"
}
while IFS= read -r line || [ -n "$line" ]; do
  line=${line%$'\r'}; line=${line#export }
  case "${line%%=*}" in
    STACKGEN_NAMES)
      export "${line%%=*}=$(dotenv_value "${line#*=}")" ;;
  esac
done < ./.env
