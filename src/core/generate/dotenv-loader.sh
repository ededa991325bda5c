# The values this script needs, read from .env as data (never run as shell code): quotes removed,
# escapes (\" \\ \$ \n \t \0NNN...) undone inside double quotes, an inline # comment dropped,
# as compose reads them.
dotenv_value() {
  local raw=$1 out="" rest chunk n digits
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
        case "$n" in
          n) out+=$'\n' ;; t) out+=$'\t' ;; r) out+=$'\r' ;; a) out+=$'\a' ;; b) out+=$'\b' ;; f) out+=$'\f' ;; v) out+=$'\v' ;;
          '"' | '\' | '$') out+=$n ;;
          0)
            # \0 and up to three digits: when they are three octal digits up to 377, the character
            # of that code (UTF-8: two bytes from 200 on), else a backslash and the digits (compose
            # drops the 0).
            digits=${rest:2:3}; digits=${digits%%[!0-9]*}
            if [[ $digits =~ ^[0-7]{3}$ ]] && ((8#$digits <= 8#377)); then
              if ((8#$digits < 8#200)); then printf -v chunk "\\$digits"
              else
                printf -v n %o $((0xC0 | 8#$digits >> 6)); printf -v chunk %o $((0x80 | (8#$digits & 63)))
                printf -v chunk "\\$n\\$chunk"
              fi
              out+=$chunk
            else out+="\\$digits"; fi
            rest=${rest:${#digits}} ;;
          *) out+="\\$n" ;;
        esac
        rest=${rest:2}
      done ;;
    \'*)
      # As written, but for a backslash before a quote, which keeps it and is dropped.
      rest=${raw:1}
      while [ -n "$rest" ]; do
        chunk=${rest%%[\\\']*}
        out+=$chunk
        rest=${rest:${#chunk}}
        case "$rest" in
          \'* | "") break ;;
          \\\'*) out+="'" ;;
          *) out+=${rest:0:2} ;;
        esac
        rest=${rest:2}
      done ;;
    *) out=${raw%% #*}; out=${out%"${out##*[![:space:]]}"} ;;
  esac
  # Handed back in REPLY: a command substitution would drop the value's trailing line breaks.
  REPLY=$out
}
# Whether $2 holds the quote $1 that closes a value: one no backslash keeps open (compose lets a
# backslash keep either quote open). What follows it on the line is left in DOTENV_AFTER.
dotenv_closes() {
  local rest=$2 chunk
  while [ -n "$rest" ]; do
    if [ "$1" = '"' ]; then chunk=${rest%%[\\\"]*}; else chunk=${rest%%[\\\']*}; fi
    rest=${rest:${#chunk}}
    case "$rest" in
      "") return 1 ;;
      \\*) rest=${rest:2} ;;
      *) DOTENV_AFTER=${rest:1}; return 0 ;;
    esac
  done
  return 1
}
# A quoted value may span lines (a certificate): its lines are the value's, never assignments.
open=""
while IFS= read -r line || [ -n "$line" ]; do
  line=${line%$'\r'}
  DOTENV_AFTER=""
  if [ -n "$open" ]; then
    value+=$'\n'$line
    dotenv_closes "$open" "$line" || continue
    open=""
  else
    line=${line#"${line%%[![:space:]]*}"}
    # `KEY=value` or `KEY: value`, perhaps after `export` (and spaces or tabs), as compose reads it.
    case "$line" in \#*) continue ;; *[=:]*) ;; *) continue ;; esac
    case "$line" in export[[:blank:]]*) line=${line#export}; line=${line#"${line%%[![:blank:]]*}"} ;; esac
    key=${line%%[=:]*}
    value=${line:${#key}+1}; value=${value#"${value%%[![:space:]]*}"}
    key=${key%"${key##*[![:space:]]}"}
    case "$value" in
      \"* | \'*) dotenv_closes "${value:0:1}" "${value:1}" || { open=${value:0:1}; continue; } ;;
    esac
  fi
  # After a closing quote compose reads on: another assignment there would give the containers
  # another value than the one read here.
  DOTENV_AFTER=${DOTENV_AFTER#"${DOTENV_AFTER%%[![:space:]]*}"}
  case "$DOTENV_AFTER" in
    "" | \#*) ;;
    *) echo "$key in .env is followed on its line by more than a comment ($DOTENV_AFTER), which Docker Compose would read as another assignment: put each on a line of its own, then run this again" >&2; exit 1 ;;
  esac
  case "$key" in
    STACKGEN_NAMES)
      # Compose reads a $ outside single quotes (and not written \$ inside double quotes) as a
      # variable: the containers would get another value than the one read here. Escaped
      # backslashes go first: in "a\\$b" the $ is not escaped, the backslash before it is.
      case "$value" in
        \'*) ;;
        *) dollars=$value; [ "${value:0:1}" != '"' ] || { dollars=${value//\\\\/}; dollars=${dollars//\\\$/}; }
          # \0044 (octal) is a $ to compose as well.
          case "$dollars" in *'$'* | *'\0044'*) echo "$key in .env holds a \$ that Docker Compose reads as a variable, so the containers would get another value: put the value in single quotes ($key='...'), then run this again" >&2; exit 1 ;; esac ;;
      esac
      dotenv_value "$value"
      export "$key=$REPLY" ;;
  esac
done < ./.env
