; The Windows installer: a per-user install (no administrator) into
; %LOCALAPPDATA%\Programs\tether, a Start-menu entry, an entry in Apps &
; features (HKCU uninstall key) and a "start at login" choice: the HKCU
; Run value that `tether service install` writes.
;
; Built by installer.sh, which defines VERSION, STAGE (the directory of
; the files to install, with files.nsh listing them) and OUTFILE.
;
; Only amd64: NSIS has x86 and amd64 stubs, none for arm64. Windows on
; Arm runs this installer and the amd64 binaries it holds under its x64
; emulation; native arm64 binaries come in the arm64 zip and by Scoop.
;
; Silent use:  tether-VERSION-setup-amd64.exe /S [/LOGIN=0] [/D=DIR]
;              uninstall.exe /S
; /LOGIN=0 leaves out the Run value; it is written by default.

!ifndef VERSION | STAGE | OUTFILE
  !error "define VERSION, STAGE and OUTFILE (installer.sh does)"
!endif

Unicode true
Target amd64-unicode
; A release is compressed with LZMA; tests may ask for the faster zlib.
!ifndef COMPRESSOR
  !define COMPRESSOR lzma
!endif
SetCompressor /SOLID ${COMPRESSOR}
ManifestDPIAware true
RequestExecutionLevel user

!define PRODUCT "tether"
!define PUBLISHER "The tether authors"
!define URL "https://github.com/tether-dev/tether"
!define UNINST_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\tether"
!define RUN_KEY "Software\Microsoft\Windows\CurrentVersion\Run"
; How long the uninstaller waits for the service, its guardians and the
; tray to let go of the binaries, in half seconds.
!define RELEASE_WAIT 40

Name "${PRODUCT} ${VERSION}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\tether"
InstallDirRegKey HKCU "${UNINST_KEY}" "InstallLocation"
; The files keep the times they were staged with (the release's), so the
; installer is the same bytes for the same input.
SetDateSave on
BrandingText "${PRODUCT} ${VERSION}"

!include MUI2.nsh
!include FileFunc.nsh
!include LogicLib.nsh

!define MUI_ICON "${STAGE}\tether.ico"
!define MUI_UNICON "${STAGE}\tether.ico"
!define MUI_ABORTWARNING
!define MUI_COMPONENTSPAGE_NODESC
!define MUI_FINISHPAGE_RUN "$INSTDIR\tether.exe"
!define MUI_FINISHPAGE_RUN_PARAMETERS "tray"
!define MUI_FINISHPAGE_RUN_TEXT "Start the tether tray now"

!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

VIProductVersion "${VIVERSION}"
VIAddVersionKey "ProductName" "${PRODUCT}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "${PRODUCT} ${VERSION} setup"
VIAddVersionKey "CompanyName" "${PUBLISHER}"
VIAddVersionKey "LegalCopyright" "Apache-2.0"

; ---- helpers shared by the installer and the uninstaller ----

; ServiceCommand VERB: runs `tether.exe [--profile P] service VERB` for
; the default profile and for each profile whose Run value (tether-P,
; tether.tray-P) starts this installation's tether.exe: upgrade hands a running service
; over to the new binary with every agent kept, stop makes it stop its
; agents and exit. A profile with no service running answers with an
; error, which is not one here.
!macro SERVICE_COMMAND_FUNC un
Function ${un}ServiceCommand
  Exch $R0 ; verb
  Push $R1
  Push $R2
  Push $R3
  Push $R4
  nsExec::Exec '"$INSTDIR\tether.exe" service $R0'
  Pop $R1
  StrCpy $R1 0
  ${Do}
    EnumRegValue $R2 HKCU "${RUN_KEY}" $R1
    ${If} $R2 == ""
      ${Break}
    ${EndIf}
    IntOp $R1 $R1 + 1
    ; The profile: P of tether-P (the service's) or tether.tray-P (the
    ; tray's, which starts the service of its profile).
    StrCpy $R3 $R2 7
    StrCpy $R4 $R2 12
    ${If} $R3 == "tether-"
      StrCpy $R3 $R2 "" 7
    ${ElseIf} $R4 == "tether.tray-"
      StrCpy $R3 $R2 "" 12
    ${Else}
      ${Continue}
    ${EndIf}
    ReadRegStr $R2 HKCU "${RUN_KEY}" $R2
    StrLen $R4 '"$INSTDIR\tether.exe"'
    StrCpy $R2 $R2 $R4
    ${If} $R2 == '"$INSTDIR\tether.exe"'
      nsExec::Exec '"$INSTDIR\tether.exe" --profile "$R3" service $R0'
      Pop $R4
    ${EndIf}
  ${Loop}
  Pop $R4
  Pop $R3
  Pop $R2
  Pop $R1
  Pop $R0
FunctionEnd
!macroend
!insertmacro SERVICE_COMMAND_FUNC ""
!insertmacro SERVICE_COMMAND_FUNC "un."

; ---- install ----

Section "tether" SecMain
  SectionIn RO
  SetOutPath "$INSTDIR"
  ; A running tether.exe (the service, its guardians, the tray) cannot
  ; be overwritten but can be renamed: the old binaries step aside, the
  ; new ones land, and the running service is upgraded to them in place.
  ; What still runs from an old file keeps it until it exits; the next
  ; install or the uninstall removes it.
  !insertmacro STAGED_ASIDE
  !insertmacro STAGED_FILES
  File "/oname=tether.ico" "${STAGE}\tether.ico"
  Push "upgrade"
  Call ServiceCommand
  ; Start at login is the next section's: without it, no Run value of
  ; this installation's service is left behind.
  ReadRegStr $R0 HKCU "${RUN_KEY}" "tether"
  ${If} $R0 == '"$INSTDIR\tether.exe" service run'
    DeleteRegValue HKCU "${RUN_KEY}" "tether"
  ${EndIf}
  !insertmacro STAGED_OLD_DELETE

  SetShellVarContext current
  CreateShortcut "$SMPROGRAMS\tether.lnk" "$INSTDIR\tether.exe" "tray" "$INSTDIR\tether.ico" 0 SW_SHOWNORMAL "" "Supervise local agents from the system tray"

  WriteUninstaller "$INSTDIR\uninstall.exe"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayName" "${PRODUCT}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINST_KEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr HKCU "${UNINST_KEY}" "URLInfoAbout" "${URL}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayIcon" "$INSTDIR\tether.ico"
  WriteRegStr HKCU "${UNINST_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINST_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINST_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINST_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINST_KEY}" "NoRepair" 1
  ; The size of the staged files in KiB, counted by installer.sh.
  WriteRegDWORD HKCU "${UNINST_KEY}" "EstimatedSize" ${SIZE_KB}
SectionEnd

; The value is `tether service install`'s for the default profile: the
; same name and command line, so `tether service status` finds it
; current and `tether service uninstall` removes it.
Section "Start tether at login" SecLogin
  WriteRegStr HKCU "${RUN_KEY}" "tether" '"$INSTDIR\tether.exe" service run'
SectionEnd

; "Start tether at login" is ticked for a new install and, over an
; existing one, as its Run value is: an upgrade keeps the user's choice.
; /LOGIN=1 or /LOGIN=0 decides it either way.
Function .onInit
  ReadRegStr $R0 HKCU "${UNINST_KEY}" "InstallLocation"
  ${If} $R0 != ""
    ReadRegStr $R1 HKCU "${RUN_KEY}" "tether"
    ${If} $R1 == ""
      SectionSetFlags ${SecLogin} 0
    ${EndIf}
  ${EndIf}
  ${GetParameters} $R0
  ClearErrors
  ${GetOptions} $R0 "/LOGIN=" $R1
  ${IfNot} ${Errors}
    ${If} $R1 == "0"
      SectionSetFlags ${SecLogin} 0
    ${ElseIf} $R1 == "1"
      SectionSetFlags ${SecLogin} ${SF_SELECTED}
    ${EndIf}
  ${EndIf}
FunctionEnd

; ---- uninstall ----

; Run values this installation's tether.exe is the program of: the
; service's (tether, tether-PROFILE) and the tray's (tether.tray...).
; Others, whoever wrote them, stay.
Function un.DeleteRunValues
  StrCpy $R1 0
  ${Do}
    EnumRegValue $R2 HKCU "${RUN_KEY}" $R1
    ${If} $R2 == ""
      ${Break}
    ${EndIf}
    StrCpy $R3 $R2 6
    ReadRegStr $R4 HKCU "${RUN_KEY}" $R2
    StrLen $R5 '"$INSTDIR\tether.exe"'
    StrCpy $R5 $R4 $R5
    ${If} $R3 == "tether"
    ${AndIf} $R5 == '"$INSTDIR\tether.exe"'
      DeleteRegValue HKCU "${RUN_KEY}" $R2
    ${Else}
      IntOp $R1 $R1 + 1
    ${EndIf}
  ${Loop}
FunctionEnd

Section "Uninstall"
  ; The service stops its agents and exits; the binaries go only once
  ; nothing runs them any more (Windows refuses to delete a running
  ; image, so a delete that succeeds says the service, its guardians and
  ; the tray have exited).
  Push "stop"
  Call un.ServiceCommand
  Call un.DeleteRunValues
  StrCpy $R0 0
  ${Do}
    ClearErrors
    !insertmacro STAGED_DELETE
    ${IfNot} ${Errors}
      ${Break}
    ${EndIf}
    IntOp $R0 $R0 + 1
    ${If} $R0 >= ${RELEASE_WAIT}
      MessageBox MB_RETRYCANCEL|MB_ICONEXCLAMATION "tether is still running (the tray, or a service that did not stop). Quit it, then retry." /SD IDCANCEL IDRETRY retry
      SetErrorLevel 2
      Abort "tether is still running: its binaries stay; run the uninstaller again once it has quit"
      retry:
      StrCpy $R0 0
    ${EndIf}
    Sleep 500
  ${Loop}
  Delete "$INSTDIR\tether.ico"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR\completions"
  ; Only if empty: anything the user put there stays.
  RMDir "$INSTDIR"

  SetShellVarContext current
  Delete "$SMPROGRAMS\tether.lnk"
  DeleteRegKey HKCU "${UNINST_KEY}"
  ; The config (%APPDATA%\tether) and the state and logs
  ; (%LOCALAPPDATA%\tether) are the user's: they stay.
SectionEnd
