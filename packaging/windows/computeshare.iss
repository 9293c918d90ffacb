; Inno Setup 6 script of the ComputeShare installer (a per-user install by default).
;
; packaging/windows.py prepends the #defines below (iss_text) and compiles the result with
; iscc into dist\ComputeShare-VERSION-windows-x64-setup.exe. To compile it by hand:
;   iscc /DAppVersion=0.1.0 /DAppVersionNumeric=0.1.0.0 /DSourceDir=C:\...\ComputeShare
;        /DIconFile=C:\...\computeshare.ico /DOutputDir=C:\...\dist packaging\windows\computeshare.iss
;
; AppId identifies the app to Windows across versions (upgrades, the uninstaller): never
; change it.

#ifndef AppVersion
  #error Define AppVersion (the project version), e.g. iscc /DAppVersion=0.1.0
#endif
#ifndef AppVersionNumeric
  #error Define AppVersionNumeric (four numbers), e.g. /DAppVersionNumeric=0.1.0.0
#endif
#ifndef SourceDir
  #error Define SourceDir: the PyInstaller folder holding both executables
#endif
#ifndef IconFile
  #error Define IconFile: the .ico of the app
#endif
#ifndef OutputDir
  #define OutputDir "dist"
#endif
#ifndef GuiExe
  #define GuiExe "computeshare-desktop.exe"
#endif
#ifndef CliExe
  #define CliExe "computeshare.exe"
#endif

[Setup]
AppId={{1C96C543-3CB4-5B3E-A740-A82DB883D5B1}
AppName=ComputeShare
AppVersion={#AppVersion}
AppVerName=ComputeShare {#AppVersion}
AppPublisher=ComputeShare
AppComments=Pool the machines you have to train one PyTorch model over the LAN.
VersionInfoVersion={#AppVersionNumeric}
VersionInfoProductName=ComputeShare
VersionInfoDescription=ComputeShare {#AppVersion} setup
; Per user by default (no administrator needed): {autopf} is then
; %LOCALAPPDATA%\Programs. A first page (or /ALLUSERS) installs for all users instead.
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=commandline dialog
DefaultDirName={autopf}\ComputeShare
DefaultGroupName=ComputeShare
DisableProgramGroupPage=yes
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
WizardStyle=modern
SetupIconFile={#IconFile}
UninstallDisplayIcon={app}\{#GuiExe}
UninstallDisplayName=ComputeShare {#AppVersion}
OutputDir={#OutputDir}
OutputBaseFilename=ComputeShare-{#AppVersion}-windows-x64-setup
; torch makes the folder large: solid LZMA2 in a separate process keeps setup small and the
; compiler's memory in check.
Compression=lzma2/max
SolidCompression=yes
LZMAUseSeparateProcess=yes
; A running app would keep its files open: ask to close it before upgrading or removing.
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

; An upgrade replaces the whole folder: files a newer torch dropped must not linger.
[InstallDelete]
Type: filesandordirs; Name: "{app}\_internal"

[Icons]
Name: "{group}\ComputeShare"; Filename: "{app}\{#GuiExe}"; Comment: "Pool the machines you have to train one model"
; A console with computeshare on its PATH, in the user's Documents.
Name: "{group}\ComputeShare command line"; Filename: "{cmd}"; Parameters: "/k set ""PATH={app};%PATH%"" && {#CliExe} --help"; WorkingDir: "{userdocs}"; IconFilename: "{app}\{#GuiExe}"
Name: "{group}\{cm:UninstallProgram,ComputeShare}"; Filename: "{uninstallexe}"
Name: "{autodesktop}\ComputeShare"; Filename: "{app}\{#GuiExe}"; Tasks: desktopicon

[Run]
Filename: "{app}\{#GuiExe}"; Description: "{cm:LaunchProgram,ComputeShare}"; Flags: nowait postinstall skipifsilent
