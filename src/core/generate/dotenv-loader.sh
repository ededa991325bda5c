# The values this script needs, read from .env as data (never run as shell code): quotes removed,
# \" \\ \$ \n undone inside double quotes, an inline # comment dropped, as compose reads them.
dotenv_value() {
  local raw=$1 out="" i=1 c n
  case "$raw" in
    \"*)
      while [ "$i" -lt "${#raw}" ]; do
        c=${raw:i:1}
        [ "$c" = '"' ] && break
        if [ "$c" = '\' ] && [ $((i + 1)) -lt "${#raw}" ]; then
          n=${raw:i+1:1}
          case "$n" in n) out+=$'\n' ;; '"' | '\' | '$') out+=$n ;; *) out+="\\$n" ;; esac
          i=$((i + 2))
        else
          out+=$c
          i=$((i + 1))
        fi
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
